// BenchPlanners: `zellige bench-planner` as a library service. For every mixture and seed
// (seed, seed + 1, ...) it generates a batch, runs zellige, joint (unless skipped) and every
// baseline (not joint-binary), and gathers per batch each planner's modeled makespan, its
// measured solve time, feasibility, solver gap, splits, communication and balance, the
// excess of zellige over joint; per mixture, the statistics over its batches (means and
// maxima, speed-ups "vs X" = X's makespan / zellige's, OOM baselines included, and how
// often zellige was slower than the best feasible baseline); overall, zellige's solve time
// and excess over all batches. Plain function; `progress` (optional) is called after each
// batch with (done, total).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "zellige/cost_model.h"
#include "zellige/planner.h"
#include "zellige/zellige_planner.h"

namespace tessera::zellige {

struct BenchOptions {
  std::vector<std::string> mixes = {"v35", "v40", "v45", "v50", "v55", "v60"};
  int64_t load_tokens_per_rank = 350000;
  double video_seconds = 15;
  int batches = 3;  // per mixture, in [1, 10000]
  uint64_t seed = 1;
  double joint_time_limit_s =
      kJointTimeLimitS;  // > 0; passed as joint.time_limit_s (not a planner option)
  bool skip_joint = false;
  PlannerOptions options;  // validated with ValidatePlannerOptions
};

// Mean and maximum of a series of samples (n = 0: mean 0, max -1e300).
struct SampleStats {
  double sum = 0, max = -1e300;
  int n = 0;
  void Add(double v);
  double mean() const { return n ? sum / n : 0; }
};

struct BenchPlannerResult {
  bool ok = false;
  std::string error;  // when !ok
  double makespan_s = 0, solve_ms = 0, gap = -1, attn_comm_bytes = 0, max_over_mean = 0;
  bool feasible = false;
  int split_sequences = 0;
  PlannerStats stats;  // zellige's stage times and bound
};

struct BenchBatch {
  std::string mix;
  uint64_t seed = 0;
  std::map<std::string, BenchPlannerResult> planners;  // by planner name
  bool has_excess = false;
  double zellige_excess_pct = 0;  // 100 (zellige - joint) / joint, when both ran

  // The planner's result when it returned a plan, else nullptr.
  const BenchPlannerResult* Find(const std::string& name) const;
};

struct BenchMixSummary {
  std::string mix;
  // Keys: excess_pct, joint_gap_pct, joint_ms, zellige_ms, zellige_splits,
  // zellige_max_over_mean, vs_usp, comm_vs_usp, vs_knapformer, slower_than_a_baseline (0/1).
  std::map<std::string, SampleStats> stats;
  // The named statistics (an empty one when none was recorded).
  SampleStats Get(const std::string& key) const;
};

struct BenchReport {
  std::vector<BenchBatch> batches;
  std::vector<BenchMixSummary> mixes;
  SampleStats zellige_ms;       // over all batches
  PlannerStats zellige_stages;  // zellige's stage times summed over all batches
  SampleStats excess_pct;       // over all batches with joint
};

// InvalidArgument naming the option: batches, joint time limit, mixtures (at least one),
// planner options (joint.time_limit_s is joint_time_limit_s's, not one of them).
core::Status ValidateBenchOptions(const BenchOptions& options);

// `plan_progress` and `solver_progress` (optional) are passed to every planner run
// (PlanningProblem::progress, ::solver_progress).
core::StatusOr<BenchReport> BenchPlanners(
    const CostModel& cost, const BenchOptions& options,
    const std::function<void(long done, long total)>& progress = nullptr,
    const std::function<void(int done, int total)>& plan_progress = nullptr,
    const SolverProgressFn& solver_progress = nullptr);

// The "batches" array of `bench-planner --json`: per batch mix, seed, planners (by name:
// makespan_s, solve_ms, feasible, gap, split_sequences, attn_comm_bytes, max_over_mean,
// stages_ms (zellige: catalog, model, cbc, split_search, stage2), or
// error and feasible = false) and zellige_excess_pct when joint ran.
core::Json ToJson(const BenchReport& report);

}  // namespace tessera::zellige
