#include <cstdio>

#include "zellige/planner.h"

namespace tessera::zellige {

const PlannerRegistryTable& Planners() {
  static const PlannerRegistryTable kPlanners = [] {
    PlannerRegistryTable r("planner", {"all"});
    // Display order; one line per planner.
    r.Add(ZelligePlannerEntry());
    r.Add(JointPlannerEntry());
    r.Add(JointBinaryPlannerEntry());
    r.Add(UspPlannerEntry());
    r.Add(KnapFormerPlannerEntry());
    r.Add(DpPlannerEntry());
    r.Add(AdaptiveLoadPlannerEntry());
    r.Add(DynamicCpPlannerEntry());
    return r;
  }();
  return kPlanners;
}

const std::vector<PlannerEntry>& PlannerRegistry() { return Planners().entries(); }

core::StatusOr<const PlannerEntry*> FindPlanner(const std::string& name) {
  return Planners().Find(name);
}

core::Status ValidatePlannerOptions(const PlannerOptions& options) {
  return Planners().ValidateOptionsForAny(options);
}

core::Status SetOptionOnce(PlannerOptions* options, const std::string& key, double value,
                           const std::string& by) {
  if (options->contains(key)) {
    return core::InvalidArgument(key + ": set twice, by " + by + " and as a planner option ('" +
                                 options->at(key) + "'); give one");
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  (*options)[key] = text;
  return core::Status::Ok();
}

ParallelConfig UlyssesRingConfig(int g, int heads) {
  int h = 1;
  for (int c = 1; c <= g; ++c)
    if (g % c == 0 && heads % c == 0) h = c;
  return {1, h, g / h};
}

std::vector<double> WholeTimes(const workload::Batch& batch, const CostModel& cost) {
  std::vector<double> t;
  t.reserve(batch.sequences.size());
  for (const auto& s : batch.sequences) t.push_back(cost.WholeTime(s.tokens));
  return t;
}

}  // namespace tessera::zellige
