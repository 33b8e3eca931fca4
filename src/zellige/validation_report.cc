#include "zellige/validation_report.h"

#include <memory>
#include <utility>

#include "zellige/cost_model_profile.h"
#include "zellige/simulator.h"

namespace tessera::zellige {

using core::Json;
using core::StatusOr;

namespace {

RankComparison CompareRanks(const PlanMeasurement& m, const SimResult& sim) {
  return {m, sim.mem_bytes, sim.busy_s};
}

Json RanksJson(const RankComparison& c) {
  Json ranks = Json::array();
  const std::vector<RankMeasurement>& m = c.measured.ranks;
  for (size_t r = 0; r < m.size(); ++r) {
    ranks.push_back({{"rank", r},
                     {"local_tokens", m[r].local_tokens},
                     {"step_s", m[r].step_s},
                     {"forward_s", m[r].forward_s},
                     {"backward_s", m[r].backward_s},
                     {"tail_s", m[r].tail_s},
                     {"peak_bytes", m[r].peak_bytes},
                     {"predicted_peak_bytes", c.predicted_peak_bytes[r]},
                     {"predicted_busy_s", c.predicted_busy_s[r]}});
  }
  return ranks;
}

Json ErrorJson(const core::PredictionError& e, const char* mae_key) {
  return {{mae_key, e.mae},
          {"mape_percent", e.mape_percent},
          {"mape_p5_percent", e.mape_p5_percent},
          {"mape_p95_percent", e.mape_p95_percent},
          {"max_ape_percent", e.max_ape_percent}};
}

// MAE / MAPE of every comparison over the rows.
core::Status FillErrors(ValidationReport* r) {
  std::vector<double> pred_t, meas_t, pred_m, meas_m, corr_t, uniform_t;
  for (const ValidationRow& row : r->rows) {
    pred_t.push_back(row.predicted_makespan_s);
    meas_t.push_back(row.measured_makespan_s);
    corr_t.push_back(row.drift_corrected_makespan_s);
    uniform_t.push_back(row.predicted_makespan_s * r->drift.factor);
    pred_m.push_back(row.predicted_peak_bytes);
    meas_m.push_back(row.measured_peak_bytes);
  }
  ASSIGN_OR_RETURN(r->makespan, core::ComparePredictions(pred_t, meas_t));
  ASSIGN_OR_RETURN(r->memory, core::ComparePredictions(pred_m, meas_m));
  ASSIGN_OR_RETURN(r->makespan_drift_corrected, core::ComparePredictions(corr_t, meas_t));
  ASSIGN_OR_RETURN(r->makespan_uniform, core::ComparePredictions(uniform_t, meas_t));
  return core::Status::Ok();
}

}  // namespace

std::vector<double> MedianComputeS(const PlanMeasurement& m) {
  std::vector<double> out;
  for (const RankMeasurement& r : m.ranks) {
    std::vector<double> fb(r.forward_s.size());
    for (size_t s = 0; s < fb.size() && s < r.backward_s.size(); ++s) {
      fb[s] = r.forward_s[s] + r.backward_s[s];
    }
    out.push_back(core::Median(fb));
  }
  return out;
}

DriftAssessment AssessDrift(const Profile& profile, const DriftProbe& probe,
                            const PlanMeasurement& probe_measured,
                            const PlanMeasurement* solo_measured) {
  DriftAssessment d;
  d.factor = probe_measured.MedianMakespanS() / probe.profiled_makespan_s;
  d.rank_compute_s = MedianComputeS(probe_measured);
  d.solo_speedup_profiled = profile.solo_speedup;
  if (solo_measured != nullptr && !d.rank_compute_s.empty()) {
    const std::vector<double> solo = MedianComputeS(*solo_measured);
    if (!solo.empty() && solo[0] > 0) d.solo_speedup_now = d.rank_compute_s[0] / solo[0];
  }
  StatusOr<Profile> scaled =
      DriftScaledProfile(profile, probe, d.rank_compute_s, d.solo_speedup_now);
  d.now_profile = scaled.ok() ? *scaled : profile;
  d.rank_factors_error = scaled.ok() ? "" : scaled.status().message();
  d.rank_time_factors = d.now_profile.rank_time_factors;
  return d;
}

StatusOr<ValidationReport> BuildValidationReport(const std::vector<ValidationCase>& cases,
                                                 const DriftProbe& probe,
                                                 const std::vector<PlanMeasurement>& measured,
                                                 const CostModel& cost) {
  if (measured.size() != cases.size() + 1 && measured.size() != cases.size() + 2) {
    return core::InvalidArgument("BuildValidationReport: got " + std::to_string(measured.size()) +
                                 " measurements for " + std::to_string(cases.size()) +
                                 " cases, must be one per case, one for the probe and one for "
                                 "the solo probe, if any");
  }
  const bool has_solo = measured.size() == cases.size() + 2;
  if (cost.profile() == nullptr) {
    return core::InvalidArgument("BuildValidationReport: cost model without a profile");
  }
  ValidationReport r;
  const PlanMeasurement& pm = measured[cases.size()];
  ASSIGN_OR_RETURN(SimResult probe_sim, Simulate(probe.probe.plan, probe.probe.batch, cost));
  r.probe_name = probe.probe.name;
  r.probe_measured_makespan_s = pm.MedianMakespanS();
  r.probe_profiled_makespan_s = probe.profiled_makespan_s;
  r.probe_profiled_compute_s = probe.profiled_compute_s;
  r.probe_predicted_makespan_s = probe_sim.makespan_s;
  r.probe_ranks = CompareRanks(pm, probe_sim);
  r.drift = AssessDrift(*cost.profile(), probe, pm, has_solo ? &measured.back() : nullptr);
  const ProfileCostModel now_cost(std::make_shared<const Profile>(r.drift.now_profile));
  for (size_t i = 0; i < cases.size(); ++i) {
    const ValidationCase& c = cases[i];
    const PlanMeasurement& m = measured[i];
    if (!m.memory_measured) {
      return core::FailedPrecondition(
          "this build does not count heap allocations (sanitizer build?); validate with the "
          "release build");
    }
    ASSIGN_OR_RETURN(SimResult sim, Simulate(c.plan, c.batch, cost));
    ASSIGN_OR_RETURN(SimResult now_sim, Simulate(c.plan, c.batch, now_cost));
    ValidationRow row;
    row.name = c.name;
    row.splits = SplitCount(c.plan);
    row.tokens = c.batch.total_tokens();
    row.predicted_makespan_s = sim.makespan_s;
    row.measured_makespan_s = m.MedianMakespanS();
    row.drift_corrected_makespan_s = now_sim.makespan_s;
    row.predicted_peak_bytes = sim.peak_mem_bytes;
    row.measured_peak_bytes = static_cast<double>(m.MaxPeakBytes());
    row.ranks = CompareRanks(m, sim);
    row.plan = ToJson(c.plan, c.batch);
    r.rows.push_back(std::move(row));
  }
  RETURN_IF_ERROR(FillErrors(&r));
  return r;
}

Json ToJson(const ValidationReport& r) {
  Json plans = Json::array();
  for (const ValidationRow& row : r.rows) {
    plans.push_back({{"name", row.name},
                     {"splits", row.splits},
                     {"tokens", row.tokens},
                     {"predicted_makespan_s", row.predicted_makespan_s},
                     {"measured_makespan_s", row.measured_makespan_s},
                     {"drift_corrected_makespan_s", row.drift_corrected_makespan_s},
                     {"predicted_peak_bytes", row.predicted_peak_bytes},
                     {"measured_peak_bytes", row.measured_peak_bytes},
                     {"ranks", RanksJson(row.ranks)},
                     {"plan", row.plan}});
  }
  return {{"label", "measured"},
          {"profile", r.profile_path},
          {"provenance", r.provenance},
          {"ranks", r.ranks},
          {"oversubscribed", r.oversubscribed},
          {"repeats", r.repeats},
          {"token_scale", r.token_scale},
          {"makespan", ErrorJson(r.makespan, "mae_s")},
          {"drift_probe",
           {{"name", r.probe_name},
            {"measured_makespan_s", r.probe_measured_makespan_s},
            {"profiled_makespan_s", r.probe_profiled_makespan_s},
            {"predicted_makespan_s", r.probe_predicted_makespan_s},
            {"factor", r.drift.factor},
            {"uniform_mape_percent", r.makespan_uniform.mape_percent},
            {"rank_compute_s", r.drift.rank_compute_s},
            {"profiled_compute_s", r.probe_profiled_compute_s},
            {"rank_time_factors", r.drift.rank_time_factors},
            {"rank_factors_error", r.drift.rank_factors_error},
            {"solo_speedup_profiled", r.drift.solo_speedup_profiled},
            {"solo_speedup_now", r.drift.solo_speedup_now},
            {"ranks", RanksJson(r.probe_ranks)}}},
          {"makespan_drift_corrected", ErrorJson(r.makespan_drift_corrected, "mae_s")},
          {"memory", ErrorJson(r.memory, "mae_bytes")},
          {"plans", plans}};
}

}  // namespace tessera::zellige
