// The memory a `run` job needs on each rank, checked before anything is allocated, so a plan
// too large for the machine is one line ("needs 41.2 GB per rank x 4 ranks, 20.1 GB
// available") instead of std::bad_alloc, the OOM killer or a swapping machine.
//
// Estimates are upper bounds from measurement (attention run, H*D = 256, 2-core VM: ~32 B
// per token per unit of width without --check, ~52 B with; the constants below are twice
// that) plus a 64 MiB base per rank:
//   rank tokens  t_r = sum over the rank's placements of ceil(L / degree), plus ceil(L / h)
//                for a split sequence (the head-sharded full sequence after the all-to-all);
//   attention    base + kAttentionBytesPerTokenWidth * width * max_r t_r
//                (+ kReferenceBytesPerTokenWidth * width * batch tokens with --check:
//                every rank holds the single-process reference);
//   training     attention part + SmallDit::ActivationBytes + BackwardScratchBytes on the
//                rank's tokens + 16 bytes per parameter (weights, gradients, AdamW m and v),
//                doubled for the reference with --check.
// CheckRunFitsMemory: InvalidArgument when bytes_per_rank * ranks_here exceeds
// `available_bytes` (ranks_here: the ranks sharing this machine). Pure functions except the
// collective overload.
#pragma once

#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "core/status.h"
#include "models/small_dit.h"
#include "workload/batch.h"
#include "zellige/plan.h"

namespace tessera::zellige::engine {

inline constexpr int64_t kAttentionBytesPerTokenWidth = 64;
inline constexpr int64_t kReferenceBytesPerTokenWidth = 104;
inline constexpr int64_t kRunBaseBytes = int64_t{64} << 20;

// max over ranks of t_r (above).
int64_t MaxRankTokens(const Plan& plan, const workload::Batch& batch);
// Doubles: huge plans give huge numbers, never an overflow.
double AttentionRunBytesPerRank(const Plan& plan, const workload::Batch& batch, int64_t width,
                                bool check);
double TrainRunBytesPerRank(const Plan& plan, const workload::Batch& batch,
                            const models::SmallDitConfig& model, bool check);
core::Status CheckRunFitsMemory(double bytes_per_rank, int ranks_here, int64_t available_bytes);
// Collective: the check with ranks_here = $OMPI_COMM_WORLD_LOCAL_SIZE (else world.size(), as
// for fake ranks sharing one process) and the smallest MemAvailable any rank sees, so every
// rank returns the same status.
core::Status CheckRunFitsMemory(comm::Communicator& world, double bytes_per_rank);

}  // namespace tessera::zellige::engine
