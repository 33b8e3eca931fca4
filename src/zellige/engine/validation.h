// RunValidation: the 21-plan protocol (zellige/validation_plans.h) run for real on the ranks
// of `world` and predicted by the profile-priced cost model (what `tessera zellige validate`
// runs). The plans, the drift probe and (with >= 2 ranks) the solo probe
// (zellige/validation_plans.h) are measured interleaved (MeasurePlansInterleaved:
// `repeats` rounds, each running every plan for `warmup` steps and one timed step), so
// interference on a shared machine does not bias one plan; the report
// (zellige/validation_report.h) holds per plan the measured makespan (median of the slowest
// rank), the measured peak (largest rank), the predictions and every error figure.
// Every rank returns the same report (the measurements are exchanged by MeasurePlan).
// Errors: InvalidArgument for a cost model without a profile or options out of range;
// FailedPrecondition when heap allocations are not counted; communication errors pass
// through. Collective over world; one thread per rank.
#pragma once

#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "core/status.h"
#include "models/small_dit.h"
#include "zellige/cost_model.h"
#include "zellige/engine/profiler.h"
#include "zellige/validation_report.h"

namespace tessera::zellige::engine {

struct ValidationOptions {
  double token_scale = 1.0 / 96;
  int repeats = 5;
  int warmup = 1;
  uint64_t seed = 1;
  models::SmallDitConfig model;
  std::string profile_path;  // recorded in the report
};

core::StatusOr<ValidationReport> RunValidation(comm::Communicator& world,
                                               const ValidationOptions& options,
                                               const CostModel& cost, const ProgressFn& progress);

}  // namespace tessera::zellige::engine
