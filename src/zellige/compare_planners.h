// ComparePlanners: `zellige plan` as a library service. Runs each chosen planner on one batch
// under a cost model and simulates its plan (modeled): makespan, speed-up over usp, balance
// (max/mean busy), attention communication, peak memory, split sequences, feasibility (with
// the OOM reason) and solve time (measured wall clock in this process).
// Planner failures: an Internal error is returned; with a single planner any failure is
// returned; otherwise the failure's message is kept in `failures` and the others still run.
// Plain functions; thread-safe as the planners.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "workload/batch.h"
#include "zellige/cost_model.h"
#include "zellige/evaluate.h"
#include "zellige/planner.h"

namespace tessera::zellige {

// "all": every planner with in_all, in registry order; otherwise the one named (NotFound
// listing the names).
core::StatusOr<std::vector<const PlannerEntry*>> SelectPlanners(const std::string& name);

struct PlannerComparisonRow {
  std::string planner;
  double makespan_s = 0;
  double vs_usp = 0;  // usp's makespan / this makespan; 0 when usp was not run
  double max_over_mean = 0;
  double attn_comm_bytes = 0;
  double peak_mem_bytes = 0;
  int split_sequences = 0;
  bool feasible = true;
  std::string infeasible_reason;  // when !feasible
  double solve_ms = 0;
  PlannerStats stats;  // the Zellige planners' stage times and bound
};

struct PlannerComparison {
  std::vector<PlannerComparisonRow> rows;  // one per planner that returned a plan, in order
  std::vector<PlannerRun> runs;            // the same planners: plans and simulations
  std::vector<std::string> failures;       // messages of planners that failed
};

// Checks that the batch fits (CheckBatchFits) and options are known (ValidatePlannerOptions),
// then runs `planners` in order (`progress` and `solver_progress`, optional, go to each planner).
core::StatusOr<PlannerComparison> ComparePlanners(
    const workload::Batch& batch, const CostModel& cost,
    const std::vector<const PlannerEntry*>& planners, const PlannerOptions& options,
    const std::function<void(int, int)>& progress = nullptr,
    const SolverProgressFn& solver_progress = nullptr);

// The "results" array of `zellige plan --json`: one object per row (infeasible_reason only
// when infeasible).
core::Json ToJson(const PlannerComparison& comparison);

// Where each rank's step time goes, per planner (modeled): compute (busy_s - comm_s), exposed
// communication (comm_s) and idle (makespan_s - busy_s: waiting for collectives, the tail, a
// profile's per-step overhead). Each list has one entry per rank; compute + comm + idle =
// makespan_s. The data of `zellige plan --plot`:
// {"title": T, "label": "modeled", "planners": [{"planner", "makespan_s", "feasible",
//  "compute_s": [...], "comm_s": [...], "idle_s": [...]}, ...]}.
core::Json RankTimeBreakdownJson(const PlannerComparison& comparison, const std::string& title);

}  // namespace tessera::zellige
