// Evaluation helpers shared by the CLI and the benchmarks: check that a batch can be
// placed at all, run a planner (timing it) and simulate its plan.
// Stateless; thread-safe.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"
#include "zellige/planner.h"
#include "zellige/simulator.h"

namespace tessera::zellige {

struct PlannerRun {
  std::string planner;
  Plan plan;
  SimResult sim;
  double solve_ms = 0;  // wall-clock of MakePlan, in this process
};

// InvalidArgument when the batch has more sequences than the simulator takes
// (CheckSimulatorLimit), or naming the first sequence that cannot fit one rank's memory
// capacity under any legal config on all N ranks (the most it can be split). Callers run it
// before planning.
core::Status CheckBatchFits(const workload::Batch& batch, const CostModel& cost);
// Runs the planner and simulates its plan; a planner failure is returned as its Status. A plan
// that breaks ValidatePlan is Internal ("<planner> produced an invalid plan: ..."); a config
// the cost model does not Supports() or a simulation error (prices not finite) is returned
// prefixed with the planner's name. CheckBatchFits also refuses a memory price that is not
// finite.
// `progress` and `solver_progress` (optional) are passed to the planner
// (PlanningProblem::progress, ::solver_progress).
core::StatusOr<PlannerRun> RunPlanner(const PlannerEntry& entry, const workload::Batch& batch,
                                      const CostModel& cost, const PlannerOptions& options,
                                      const std::function<void(int, int)>& progress = nullptr,
                                      const SolverProgressFn& solver_progress = nullptr);

}  // namespace tessera::zellige
