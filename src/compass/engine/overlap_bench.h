// The overlap bench (`tessera compass bench`, Compass part 2): every strategy of
// overlap_strategy.h on every TP operator of a grid (overlap_grid.h), on real MPI ranks over a
// topology's emulated links (link_runtime.h), interleaved, median of `repeats`.
//
// Method, per configuration: the rank builds its seeded inputs (tp_op_reference.h); a warm-up run
// of every strategy (which in kModeled mode records the GEMM shapes: rank 0 then times each shape
// alone on one thread, ProfileGemms, and broadcasts the table); then `repeats` rounds, each
// running every strategy once in order, every run starting on all ranks at one instant agreed
// through the futex barrier; a run's time is from the last rank's begin to the last rank's end
// (run_timing.h), in device seconds (wall / time scale).
// --check (check = true): before timing, every strategy runs once with real compute and
// every rank's output is compared with the single-process reference (TpOpReference); the
// largest relative error per (configuration, strategy) is reported and one above 1e-5 fails
// the bench (Internal naming configuration, strategy and rank).
// Strategies that take a degree run as given; the grid's degrees add decomp:D for every D that
// divides the configuration's split length (tp_op.h DecompositionLength) and is <= 16.
// `mpi` is checked but never timed.
// Collective over `world` (same config on every rank; world.size() = TP). Progress on rank 0.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/link_algo.h"
#include "compass/engine/overlap_context.h"
#include "compass/engine/tp_op_reference.h"
#include "compass/strategy_name.h"
#include "core/json_util.h"
#include "hw/topology.h"
#include "runtime/time_scale.h"

namespace tessera::compass {

struct OverlapBenchConfig {
  std::vector<TpOpShape> shapes;         // tp = world size
  std::vector<StrategyName> strategies;  // run in this order (duplicates once)
  std::vector<int> degrees;              // decomp:D sweep (feasible D only)
  runtime::ComputeMode compute = runtime::ComputeMode::kReal;
  bool check = false;
  int repeats = 7;  // 0: check only
  uint64_t seed = 1;
  std::optional<int64_t> wake_lead_ns;
  std::function<void(int, int)> progress;  // rank 0: (runs done, runs in total)
};

struct OverlapConfigResult;
// Called on rank 0 after each configuration: (its index, the count, its result), so a long
// run shows (and a log keeps) every finished configuration.
using OverlapConfigDone = std::function<void(int, int, const OverlapConfigResult&)>;

struct OverlapRun {
  std::string strategy;  // StrategyName::Name(): "fused-ring2", "decomp:4" (as reported)
  int degree = 0;        // D for decomp, 0 otherwise
  bool timed = true;
  double median_s = 0, min_s = 0, max_s = 0;  // device seconds (0 when not timed)
  double rel_error = -1;                      // largest over ranks; -1: not checked
  // |median of the even rounds - median of the odd rounds| / median: how far a median of
  // half the runs moves (0 with fewer than 2 runs).
  double half_spread = 0;
  double cv = 0;  // standard deviation / mean of the runs' times (0 with fewer than 2)
  // The profiled device time of the strategy's GEMMs on one rank, run one after another
  // (decomp:D: D parts; a part's GEMM time is compute_s / D).
  double compute_s = 0;
  // decomp:D: one part's single-ring collective (1/D of the block), modeled (collective_model.h).
  double part_collective_s = 0;
};

// The run's strategy as a type (StrategyName::Parse of `strategy`); nullopt for a name that
// does not parse (a bench only records names it ran).
std::optional<StrategyName> StrategyOf(const OverlapRun& r);

struct OverlapConfigResult {
  TpOpShape shape;
  double gemm_s = 0;  // the whole GEMM on one rank, device seconds (profiled, one thread)
  double modeled_collective_s = 0;  // single-ring collective of the whole operator (model)
  // The whole operator's collective per algorithm (model; ring2 on the double ring's order).
  std::map<comm::LinkAlgo, double> modeled_collective_by_algo;
  // Every GEMM shape its strategies run (whole and parts), profiled: device seconds.
  std::vector<std::pair<runtime::GemmShape, double>> gemms;
  std::vector<OverlapRun> runs;
  const OverlapRun* Find(const std::string& strategy) const;
};

struct OverlapBench {
  std::string topology;
  int ranks = 0;
  runtime::TimeScale scale;
  runtime::ComputeMode compute = runtime::ComputeMode::kReal;
  bool checked = false;
  int repeats = 0;
  std::vector<int> ring1_order, ring2_order;  // devices in ring order
  std::vector<OverlapConfigResult> configs;
};

core::StatusOr<OverlapBench> RunOverlapBench(comm::Communicator& world,
                                             const hw::Topology& topology,
                                             const runtime::TimeScale& scale,
                                             const OverlapBenchConfig& config,
                                             const OverlapConfigDone& config_done = nullptr);

core::Json ToJson(const OverlapBench& b);

}  // namespace tessera::compass
