// The report of `tessera zellige validate`: per plan of the protocol (validation_plans.h) the
// predicted (profile-priced cost model + simulator) and measured step makespan and peak
// memory, the drift probe's factors, and MAE / MAPE of every comparison (core::ComparePredictions).
// Pure arithmetic on measurements (zellige/step_measurement.h); the run itself is
// zellige::engine::RunValidation.
//
// Drift: factor = probe measured makespan / the profiler's own measurement of it; per rank,
// rank_compute_s[r] = median over steps of rank r's forward + backward on the probe, and
// DriftScaledProfile turns them into the profile of the machine as it runs now. When that
// fails (a factor outside [kMinSpeedFactor, kMaxSpeedFactor]) the reason is kept and the
// "drift corrected" predictions repeat the raw ones. With a solo probe (validation_plans.h;
// N >= 2) the corrected profile also takes the solo speed-up measured now: rank 0's forward +
// backward on the drift probe over the same on the solo probe. Plain values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/stats.h"
#include "core/status.h"
#include "zellige/cost_model.h"
#include "zellige/profile.h"
#include "zellige/step_measurement.h"
#include "zellige/validation_plans.h"

namespace tessera::zellige {

// Every rank's measurement of one plan next to the simulator's per-rank figures.
struct RankComparison {
  PlanMeasurement measured;
  std::vector<double> predicted_peak_bytes;  // per rank
  std::vector<double> predicted_busy_s;      // per rank
};

struct ValidationRow {
  std::string name;
  int splits = 0;
  int64_t tokens = 0;
  double predicted_makespan_s = 0;
  double measured_makespan_s = 0;
  double drift_corrected_makespan_s = 0;
  double predicted_peak_bytes = 0;
  double measured_peak_bytes = 0;
  RankComparison ranks;
  core::Json plan;  // ToJson(plan, batch)
};

// The drift probe's numbers (see the file comment).
struct DriftAssessment {
  double factor = 1;                      // measured / profiled makespan of the probe
  std::vector<double> rank_compute_s;     // per rank, forward + backward now
  std::vector<double> rank_time_factors;  // of the profile used for the x drift predictions
  std::string rank_factors_error;         // why rank factors were not applied; "" when they were
  double solo_speedup_profiled = 1;       // the profile's solo_speedup
  double solo_speedup_now = 0;            // measured with the solo probe; 0 without one
  Profile now_profile;                    // DriftScaledProfile, or the profile unchanged
};

// Median forward + backward per rank of a measurement.
std::vector<double> MedianComputeS(const PlanMeasurement& m);
// `solo_measured` (optional): the solo probe's measurement.
DriftAssessment AssessDrift(const Profile& profile, const DriftProbe& probe,
                            const PlanMeasurement& probe_measured,
                            const PlanMeasurement* solo_measured = nullptr);

struct ValidationReport {
  // Context, copied into the JSON.
  std::string profile_path;
  std::string provenance;  // of the cost model's cluster
  int ranks = 0;
  bool oversubscribed = false;
  int repeats = 0;
  double token_scale = 0;

  std::vector<ValidationRow> rows;
  // Drift probe.
  std::string probe_name;
  double probe_measured_makespan_s = 0;
  double probe_profiled_makespan_s = 0;
  double probe_profiled_compute_s = 0;
  double probe_predicted_makespan_s = 0;
  DriftAssessment drift;
  RankComparison probe_ranks;
  // Errors of the predictions against the measurements.
  core::PredictionError makespan;
  core::PredictionError makespan_drift_corrected;  // cost model with the rank factors
  core::PredictionError makespan_uniform;          // raw predictions x drift.factor
  core::PredictionError memory;
};

// measured[i] is cases[i]'s measurement, then the probe's (cases.size() + 1 entries), then,
// when there is one, the solo probe's (cases.size() + 2). The context fields are left for the
// caller. InvalidArgument on a size mismatch;
// FailedPrecondition when memory was not measured; simulator errors pass through.
core::StatusOr<ValidationReport> BuildValidationReport(const std::vector<ValidationCase>& cases,
                                                       const DriftProbe& probe,
                                                       const std::vector<PlanMeasurement>& measured,
                                                       const CostModel& cost);

// The JSON `tessera zellige validate --json` writes.
core::Json ToJson(const ValidationReport& r);

}  // namespace tessera::zellige
