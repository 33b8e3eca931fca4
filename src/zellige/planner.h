// Planner: turns a batch into a Plan under a cost model. Planners are registered by name
// in one table (planner_registry.cc): adding one is one file plus one line there.
// A planner may fail with a Status ("planning failed: ..."); it never returns an invalid
// plan. Memory-unaware baselines may return plans that the simulator marks OOM.
// Planners are stateless; MakePlan is thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "zellige/cost_model.h"
#include "zellige/plan.h"
#include "workload/batch.h"

namespace tessera::zellige {

// Free-form options, e.g. {"knapformer.bags": "g8n1+g4n1+g2n1+g1n2"}.
using PlannerOptions = std::map<std::string, std::string>;

struct PlanningProblem {
  const workload::Batch& batch;
  const CostModel& cost;
  const PlannerOptions& options;
};

class Planner {
 public:
  virtual ~Planner() = default;
  virtual core::StatusOr<Plan> MakePlan(const PlanningProblem& problem) const = 0;
};

struct PlannerEntry {
  const char* name;
  const char* description;
  bool disjoint_groups;  // places every sequence on one of a fixed set of disjoint groups
  bool in_all;           // run by `--planner all` (the slow exact references are not)
  std::unique_ptr<Planner> (*make)();
};

// All registered planners, in display order.
const std::vector<PlannerEntry>& PlannerRegistry();
// The entry called `name`, or NotFound listing the names.
core::StatusOr<const PlannerEntry*> FindPlanner(const std::string& name);

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
