// How the M micro-batches of a step are spread over the live pipelines, and which samples each
// micro-batch holds -- so that the global batch, and with it the gradient scale, stays the
// same for any number of survivors.
//
// Counts: pipeline p with S_p stages and period tau_p (the slowest stage per micro-batch) takes
// T_p(m) = (m + S_p - 1) tau_p for m micro-batches under 1F1B. The micro-batches are handed out
// one at a time to argmin_p T_p(m_p + 1), ties to the lower p; for costs that increase in m and
// are separable this minimises max_p T_p(m_p). Pipelines get contiguous ranges of micro-batch
// ids in pipeline order: pipeline p runs ids [first_p, first_p + m_p).
//
// Samples: micro-batch k of step t holds samples pi_t[k b, (k + 1) b), pi_t a permutation of
// [0, B) drawn from (seed, t) alone -- independent of how many pipelines there are -- so a
// micro-batch's data never depends on who computes it.
//
// Errors: InvalidArgument for no pipelines, tau <= 0 or not finite, stages < 1, M < 0.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace tessera::elaswave {

struct PipelineTiming {
  int stages = 1;
  double tau_s = 1.0;
};

struct MicroBatchAssignment {
  std::vector<int64_t> count;  // m_p per pipeline
  std::vector<int64_t> first;  // first micro-batch id of pipeline p
  double makespan_s = 0;       // max_p T_p(m_p) (pipelines with m_p = 0 count 0)
};

// T_p(m) = (m + S_p - 1) tau_p, 0 for m = 0: the 1F1B time of m micro-batches on pipeline p.
double PipelineMakespanS(const PipelineTiming& p, int64_t m);

core::StatusOr<MicroBatchAssignment> AssignMicroBatches(int64_t num_micro_batches,
                                                        const std::vector<PipelineTiming>& pipes);

// pi_t: a permutation of [0, global_batch) from (seed, step) (Fisher-Yates over core::Rng).
std::vector<int64_t> SamplePermutation(int64_t global_batch, uint64_t seed, int64_t step);

}  // namespace tessera::elaswave
