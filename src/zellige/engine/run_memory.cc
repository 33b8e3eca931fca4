#include "zellige/engine/run_memory.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "comm/communicator.h"
#include "core/memory_info.h"

namespace tessera::zellige::engine {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string Gigabytes(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f GB", bytes / 1e9);
  return buf;
}

}  // namespace

int64_t MaxRankTokens(const Plan& plan, const workload::Batch& batch) {
  std::vector<int64_t> t(static_cast<size_t>(std::max(plan.num_ranks, 0)), 0);
  for (const Placement& p : plan.placements) {
    if (p.seq < 0 || p.seq >= static_cast<int>(batch.sequences.size())) continue;
    const int64_t len = batch.sequences[static_cast<size_t>(p.seq)].tokens;
    const int64_t g = std::max<int64_t>(1, static_cast<int64_t>(p.ranks.size()));
    int64_t per_rank = CeilDiv(len, g);
    if (g > 1) per_rank += CeilDiv(len, std::max(1, p.config.h));
    for (int r : p.ranks) {
      if (r >= 0 && r < plan.num_ranks) t[static_cast<size_t>(r)] += per_rank;
    }
  }
  return t.empty() ? 0 : *std::max_element(t.begin(), t.end());
}

double AttentionRunBytesPerRank(const Plan& plan, const workload::Batch& batch, int64_t width,
                                bool check) {
  double bytes = static_cast<double>(kRunBaseBytes) +
                 static_cast<double>(kAttentionBytesPerTokenWidth) * static_cast<double>(width) *
                     static_cast<double>(MaxRankTokens(plan, batch));
  if (check) {
    bytes += static_cast<double>(kReferenceBytesPerTokenWidth) * static_cast<double>(width) *
             static_cast<double>(batch.total_tokens());
  }
  return bytes;
}

double TrainRunBytesPerRank(const Plan& plan, const workload::Batch& batch,
                            const models::SmallDitConfig& model, bool check) {
  const int64_t local = MaxRankTokens(plan, batch);
  const int64_t seqs = static_cast<int64_t>(batch.sequences.size());
  auto model_bytes = [&](int64_t tokens) {
    // The model's byte formulas are int64: far beyond any machine, answer in doubles instead.
    const double rough = static_cast<double>(tokens) * static_cast<double>(model.num_layers) *
                         (16.0 * model.hidden + 2.0 * model.ffn_hidden + model.num_heads + 2);
    if (rough > 1e15) return 4.0 * rough;
    return static_cast<double>(models::SmallDit::ActivationBytes(model, tokens, seqs)) +
           static_cast<double>(models::SmallDit::BackwardScratchBytes(model, tokens, seqs)) +
           16.0 * models::SmallDitParameterCount(model);
  };
  double bytes = AttentionRunBytesPerRank(plan, batch, model.hidden, check) + model_bytes(local);
  if (check) bytes += model_bytes(batch.total_tokens());
  return bytes;
}

core::Status CheckRunFitsMemory(comm::Communicator& world, double bytes_per_rank) {
  int ranks_here = world.size();
  if (const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"); local != nullptr) {
    ranks_here = std::max(1, std::atoi(local));
  }
  // Every rank must decide alike: the smallest free memory any rank sees.
  ASSIGN_OR_RETURN(std::vector<int64_t> avail,
                   comm::AllGatherValue<int64_t>(world, core::AvailableMemoryBytes()));
  return CheckRunFitsMemory(bytes_per_rank, ranks_here,
                            *std::min_element(avail.begin(), avail.end()));
}

core::Status CheckRunFitsMemory(double bytes_per_rank, int ranks_here, int64_t available_bytes) {
  if (available_bytes <= 0) return core::Status::Ok();  // unknown: nothing to check against
  const double need = bytes_per_rank * std::max(1, ranks_here);
  if (need <= static_cast<double>(available_bytes)) return core::Status::Ok();
  return core::InvalidArgument(
      "this run needs about " + Gigabytes(bytes_per_rank) + " per rank x " +
      std::to_string(ranks_here) + " ranks on this machine, but " +
      Gigabytes(static_cast<double>(available_bytes)) +
      " is available; use a smaller token_scale or load, fewer ranks per machine, or turn "
      "check off");
}

}  // namespace tessera::zellige::engine
