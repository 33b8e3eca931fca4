// Planner: turns a batch into a Plan under a cost model. Planners are registered by name
// in one core::Registry (planner_registry.cc): adding one is one file (the planner, its
// factory and its PlannerEntry: name, description, option keys, traits) plus one line there.
// A planner may fail with a Status ("planning failed: ..."); it never returns an invalid
// plan. Memory-unaware baselines may return plans that the simulator marks OOM.
// Planners are stateless; MakePlan is thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/registry.h"
#include "core/status.h"
#include "solver/cbc_solver.h"
#include "workload/batch.h"
#include "zellige/cost_model.h"
#include "zellige/plan.h"

namespace tessera::zellige {

// Options by key, e.g. {"knapformer.bags": "g8n1+g4n1+g2n1+g1n2"}; each planner declares the
// keys it reads in its entry.
using PlannerOptions = core::RegistryOptions;

// What an exact planner (joint, joint-binary) reports while CBC searches: its stage
// ("makespan": minimising the step time, incumbent and bound in modeled seconds; "splits":
// fewest split sequences within the makespan found, a count plus a byte term), the time since
// the planner started and the whole time limit it runs under, and CBC's state.
struct SolverProgress {
  std::string planner;
  std::string stage;
  double elapsed_s = 0;
  double time_limit_s = 0;
  solver::SolveProgress solve;
};
using SolverProgressFn = std::function<void(const SolverProgress&)>;

struct PlanningProblem {
  const workload::Batch& batch;
  const CostModel& cost;
  const PlannerOptions& options;
  // Optional: called by long-running planners with (parts done, parts in all), possibly
  // from worker threads (one call at a time).
  std::function<void(int done, int total)> progress = nullptr;
  // Optional: called by the exact planners about once a second while CBC runs, and at the end
  // of each solve (solve.done), from the planning thread.
  SolverProgressFn solver_progress = nullptr;
};

class Planner {
 public:
  virtual ~Planner() = default;
  virtual core::StatusOr<Plan> MakePlan(const PlanningProblem& problem) const = 0;
};

// What a planner entry carries besides name, description, factory and option keys.
struct PlannerTraits {
  bool disjoint_groups = false;  // places every sequence on one of a fixed set of disjoint groups
  bool in_all = true;            // run by `--planner all` (the slow exact references are not)
};

// Fields: name, description, make (the factory), options (declared keys), disjoint_groups,
// in_all.
using PlannerEntry = core::RegistryEntry<Planner, PlannerTraits>;
using PlannerRegistryTable = core::Registry<Planner, PlannerTraits>;

// The registry ("planner"; Find's message also accepts "all").
const PlannerRegistryTable& Planners();
// All registered planners, in display order.
const std::vector<PlannerEntry>& PlannerRegistry();
// The entry called `name`, or NotFound "planner: got 'x', must be one of zellige, ..., dynamic-cp
// or all".
core::StatusOr<const PlannerEntry*> FindPlanner(const std::string& name);
// InvalidArgument naming the first key no planner declares (options are shared by every
// planner a command runs), e.g. "planner options: got 'zellige.gapp', must be one of ...".
core::Status ValidatePlannerOptions(const PlannerOptions& options);

// Sets options[key] = value for a front end's own flag (`by`, e.g. "--time-limit"); InvalidArgument
// "<key>: set twice, by <by> and as a planner option; give one" when the key is already there
// (one value would silently override the other).
core::Status SetOptionOnce(PlannerOptions* options, const std::string& key, double value,
                           const std::string& by);

// Entries, one per planner file (defined next to the planner).
PlannerEntry ZelligePlannerEntry();
PlannerEntry JointPlannerEntry();
PlannerEntry JointBinaryPlannerEntry();
PlannerEntry UspPlannerEntry();
PlannerEntry KnapFormerPlannerEntry();
PlannerEntry DpPlannerEntry();
PlannerEntry AdaptiveLoadPlannerEntry();
PlannerEntry DynamicCpPlannerEntry();

// Factories, one per file.
std::unique_ptr<Planner> NewUspPlanner();
std::unique_ptr<Planner> NewKnapFormerPlanner();
std::unique_ptr<Planner> NewDpPlanner();
std::unique_ptr<Planner> NewAdaptiveLoadPlanner();
std::unique_ptr<Planner> NewDynamicCpPlanner();
std::unique_ptr<Planner> NewZelligePlanner();
std::unique_ptr<Planner> NewJointPlanner();
std::unique_ptr<Planner> NewJointBinaryPlanner();

// Shared helpers for planners.
// The config a fixed group of `g` ranks uses for a sequence: Ulysses over the largest
// divisor of `heads` that divides g (head-parallel inside the group), ring for the rest.
ParallelConfig UlyssesRingConfig(int g, int heads);
// Whole-sequence modeled time of every sequence of the batch.
std::vector<double> WholeTimes(const workload::Batch& batch, const CostModel& cost);

}  // namespace tessera::zellige
