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
#include "workload/batch.h"
#include "zellige/cost_model.h"
#include "zellige/plan.h"

namespace tessera::zellige {

// Options by key, e.g. {"knapformer.bags": "g8n1+g4n1+g2n1+g1n2"}; each planner declares the
// keys it reads in its entry.
using PlannerOptions = core::RegistryOptions;

struct PlanningProblem {
  const workload::Batch& batch;
  const CostModel& cost;
  const PlannerOptions& options;
  // Optional: called by long-running planners with (parts done, parts in all), possibly
  // from worker threads (one call at a time).
  std::function<void(int done, int total)> progress = nullptr;
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
