#include "zellige/engine/validation.h"

#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

#include "zellige/engine/plan_measurement.h"

namespace tessera::zellige::engine {

core::StatusOr<ValidationReport> RunValidation(comm::Communicator& world,
                                               const ValidationOptions& options,
                                               const CostModel& cost, const ProgressFn& progress) {
  if (cost.profile() == nullptr) {
    return core::InvalidArgument(
        "validate: the cost model has no profile, must be priced from a measured profile");
  }
  ValidationSpec spec;
  spec.num_ranks = world.size();
  spec.heads = static_cast<int>(options.model.num_heads);
  spec.token_scale = options.token_scale;
  spec.seed = options.seed;
  ASSIGN_OR_RETURN(std::vector<ValidationCase> cases, MakeValidationCases(spec));
  ASSIGN_OR_RETURN(const DriftProbe probe, MakeDriftProbe(*cost.profile()));
  std::vector<PlanCase> pcs;
  for (const ValidationCase& c : cases) pcs.push_back({&c.plan, &c.batch});
  pcs.push_back({&probe.probe.plan, &probe.probe.batch});
  // With >= 2 ranks, the solo probe too (the solo speed-up now, validation_plans.h).
  std::optional<ValidationCase> solo;
  if (world.size() >= 2) {
    ASSIGN_OR_RETURN(solo, MakeSoloProbe(probe));
    pcs.push_back({&solo->plan, &solo->batch});
  }
  MeasureOptions mo;
  mo.warmup_steps = options.warmup;
  mo.steps = options.repeats;
  mo.seed = options.seed;
  ASSIGN_OR_RETURN(std::vector<PlanMeasurement> measured,
                   MeasurePlansInterleaved(pcs, options.model, world, mo, progress));
  ASSIGN_OR_RETURN(ValidationReport report, BuildValidationReport(cases, probe, measured, cost));
  report.profile_path = options.profile_path;
  report.provenance = cost.cluster().provenance;
  report.ranks = world.size();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  report.oversubscribed = static_cast<unsigned>(world.size()) > cores;
  report.repeats = options.repeats;
  report.token_scale = options.token_scale;
  return report;
}

}  // namespace tessera::zellige::engine
