#include "elaswave/microbatch_counts.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "core/rng.h"

namespace tessera::elaswave {
double PipelineMakespanS(const PipelineTiming& p, int64_t m) {
  return m == 0 ? 0.0 : static_cast<double>(m + p.stages - 1) * p.tau_s;
}

core::StatusOr<MicroBatchAssignment> AssignMicroBatches(int64_t num_micro_batches,
                                                        const std::vector<PipelineTiming>& pipes) {
  if (pipes.empty()) return core::InvalidArgument("micro-batch assignment: no live pipeline");
  if (num_micro_batches < 0) {
    return core::InvalidArgument(
        fmt::format("micro-batch assignment: {} micro-batches", num_micro_batches));
  }
  for (size_t p = 0; p < pipes.size(); ++p) {
    if (pipes[p].stages < 1 || !std::isfinite(pipes[p].tau_s) || pipes[p].tau_s <= 0) {
      return core::InvalidArgument(
          fmt::format("micro-batch assignment: pipeline {}: {} stages, tau {} s; need >= 1 stage "
                      "and a finite tau > 0",
                      p, pipes[p].stages, pipes[p].tau_s));
    }
  }
  MicroBatchAssignment a;
  a.count.assign(pipes.size(), 0);
  for (int64_t k = 0; k < num_micro_batches; ++k) {
    size_t best = 0;
    double best_t = PipelineMakespanS(pipes[0], a.count[0] + 1);
    for (size_t p = 1; p < pipes.size(); ++p) {
      const double t = PipelineMakespanS(pipes[p], a.count[p] + 1);
      if (t < best_t) {
        best_t = t;
        best = p;
      }
    }
    ++a.count[best];
  }
  a.first.assign(pipes.size(), 0);
  for (size_t p = 1; p < pipes.size(); ++p) a.first[p] = a.first[p - 1] + a.count[p - 1];
  for (size_t p = 0; p < pipes.size(); ++p) {
    a.makespan_s = std::max(a.makespan_s, PipelineMakespanS(pipes[p], a.count[p]));
  }
  return a;
}

std::vector<int64_t> SamplePermutation(int64_t global_batch, uint64_t seed, int64_t step) {
  std::vector<int64_t> pi(static_cast<size_t>(std::max<int64_t>(global_batch, 0)));
  std::iota(pi.begin(), pi.end(), 0);
  core::Rng rng = core::Rng(seed).Fork(static_cast<uint64_t>(step));
  for (int64_t i = global_batch - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(i + 1)));
    std::swap(pi[i], pi[j]);
  }
  return pi;
}

}  // namespace tessera::elaswave
