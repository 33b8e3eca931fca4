// Taking a CompassProfile (profile.h) on real MPI ranks over a topology's emulated links:
// what `tessera compass profile` runs.
//
// Steps (collective over `world`; world.size() = TP >= 2, else InvalidArgument; progress on
// rank 0):
//  1. strategies: the overlap bench (overlap_bench.h) with none, fused-ring1, fused-ring2,
//     fused-direct and decomp:D, D in `degrees` where feasible, on every operator of
//     `shapes`, real GEMMs, `repeats` interleaved runs; its GEMM table (every whole and part
//     shape, profiled alone) becomes the profile's gemms;
//  2. per operator the fit on d in {1, 2, 4, 8} and its d*; per class (strategy_model.h
//     OperatorClassOf) the closed-form and pipeline models fitted on all operators of the class;
//     per strategy family and class the selector's overheads (selector_eval.h);
//  3. links: the collective bench (collective_bench.h) at `link_block_wire_bytes`;
//  4. contention: a (contention_m, n, k) GEMM on every rank, timed alone and while the rank's
//     comm thread runs single-ring AllGathers of `contention_block_wire_bytes` per rank (as
//     many as cover twice the GEMM's time, the same count on every rank), interleaved,
//     `repeats` of each; the medians over all ranks' runs give kappa = overlapped / alone.
// The caller sets the BLAS thread count (one per rank, as the bench).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "compass/engine/overlap_bench.h"
#include "compass/profile.h"
#include "compass/tp_op.h"
#include "hw/topology.h"
#include "runtime/time_scale.h"

namespace tessera::compass {

struct ProfileRunConfig {
  std::vector<TpOpShape> shapes;
  std::vector<int> degrees = {1, 2, 4, 8, 16};
  int repeats = 7;
  std::vector<int64_t> link_block_wire_bytes = {256 << 10, 1 << 20};
  int64_t contention_m = 512, contention_n = 1024, contention_k = 1024;
  int64_t contention_block_wire_bytes = 1 << 20;
  std::optional<int64_t> wake_lead_ns;
  std::string machine;                            // recorded in the profile
  std::function<void(const std::string&)> stage;  // rank 0: "decomposition", "links", ...
  std::function<void(int, int)> progress;         // rank 0: (runs done, runs in total) per stage
  OverlapConfigDone config_done;                  // rank 0: after each decomposed operator
};

core::StatusOr<CompassProfile> RunCompassProfile(comm::Communicator& world,
                                                 const hw::Topology& topology,
                                                 const runtime::TimeScale& scale,
                                                 const ProfileRunConfig& config);

}  // namespace tessera::compass
