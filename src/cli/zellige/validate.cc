// `tessera zellige validate`: the 21-plan protocol (zellige/validation_plans.h) run for real
// and predicted by the profile-priced cost model.
//
//   tessera zellige validate --profile FILE [--ranks 2] [--token-scale 0.0104] [--repeats 5]
//       [--json FILE]
//
// Per plan: measured makespan = median over `repeats` timed steps of the slowest rank's step
// time; the plans are measured interleaved (zellige::engine::MeasurePlansInterleaved: `repeats`
// rounds, each running every plan for --warmup steps and one timed step), so interference on
// a shared machine does not bias one plan; measured peak = the largest rank's peak
// allocated heap bytes in a step. Predicted = zellige::Simulate on the profile cost model
// (makespan incl. the step overhead; peak = base + the rank's placed sequences' bytes, max
// over ranks). Prints a table and the MAE and MAPE of both (zellige/prediction_error.h);
// the drift probe (zellige/validation_plans.h), measured interleaved with the plans, gives
// the factor (measured now) / (measured by the profiler) of a profile point, and per rank the
// factor of its forward + backward alone (zellige::DriftScaledProfile); the makespan MAE and
// MAPE of the predictions of the cost model with those rank factors are printed as well
// (labelled "x drift"; the raw figures come first; the uniform factor's MAPE for comparison);
// --json writes every number. Ranks beyond the machine's cores are labelled oversubscribed.
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "cli/zellige/profile_job.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "zellige/prediction_error.h"
#include "zellige/profile.h"
#include "zellige/simulator.h"
#include "zellige/validation_plans.h"

namespace tessera::cli {

using core::Json;
using core::Status;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Every rank's per-step measurements of one plan next to the simulator's per-rank figures.
Json RanksJson(const zellige::engine::PlanMeasurement& m, const zellige::SimResult& sim) {
  Json ranks = Json::array();
  for (size_t r = 0; r < m.ranks.size(); ++r) {
    ranks.push_back({{"rank", r},
                     {"local_tokens", m.ranks[r].local_tokens},
                     {"step_s", m.ranks[r].step_s},
                     {"forward_s", m.ranks[r].forward_s},
                     {"backward_s", m.ranks[r].backward_s},
                     {"tail_s", m.ranks[r].tail_s},
                     {"peak_bytes", m.ranks[r].peak_bytes},
                     {"predicted_peak_bytes", sim.mem_bytes[r]},
                     {"predicted_busy_s", sim.busy_s[r]}});
  }
  return ranks;
}

struct ValidateArgs {
  ProfileJobArgs job;
  double token_scale = 1.0 / 96;
  std::string json_path;
};

Status ValidateOnWorld(const ValidateArgs& a, comm::Communicator& world,
                       const zellige::CostModel& cost) {
  const int n = world.size(), me = world.rank();
  zellige::ValidationSpec spec;
  spec.num_ranks = n;
  spec.heads = static_cast<int>(a.job.model.heads);
  spec.token_scale = a.token_scale;
  spec.seed = a.job.seed;
  ASSIGN_OR_RETURN(std::vector<zellige::ValidationCase> cases, zellige::MakeValidationCases(spec));
  const models::SmallDitConfig cfg = ToSmallDitConfig(a.job.model);
  const zellige::engine::MeasureOptions mo = ToMeasureOptions(a.job);
  std::unique_ptr<core::ProgressBar> bar;
  if (me == 0) {
    bar = std::make_unique<core::ProgressBar>("validate",
                                              static_cast<long>(cases.size() + 1) * a.job.repeats);
  }
  // The drift probe runs interleaved with the cases (zellige/validation_plans.h).
  if (cost.profile() == nullptr) return core::Internal("validate: cost model without profile");
  ASSIGN_OR_RETURN(const zellige::DriftProbe drift_probe, zellige::MakeDriftProbe(*cost.profile()));
  const zellige::ValidationCase& probe = drift_probe.probe;
  std::vector<zellige::engine::PlanCase> pcs;
  for (const zellige::ValidationCase& c : cases) pcs.push_back({&c.plan, &c.batch});
  pcs.push_back({&probe.plan, &probe.batch});
  ASSIGN_OR_RETURN(std::vector<zellige::engine::PlanMeasurement> measured,
                   zellige::engine::MeasurePlansInterleaved(pcs, cfg, world, mo, [&](int done, int) {
                     if (bar) bar->Update(done);
                   }));
  if (bar) bar->Done();
  ASSIGN_OR_RETURN(zellige::SimResult probe_sim, zellige::Simulate(probe.plan, probe.batch, cost));
  const double probe_meas = measured.back().MedianMakespanS();
  const double drift = probe_meas / drift_probe.profiled_makespan_s;
  // Per-rank drift: each rank's forward + backward on the probe now against the profiler's
  // price of that work gives the cost model of the machine as it runs now.
  std::vector<double> probe_rank_s;
  for (const zellige::engine::RankMeasurement& r : measured.back().ranks) {
    std::vector<double> fb(r.forward_s.size());
    for (size_t s = 0; s < fb.size(); ++s) fb[s] = r.forward_s[s] + r.backward_s[s];
    probe_rank_s.push_back(zellige::engine::Median(fb));
  }
  // A probe too far off for a profile to describe (e.g. tiny plans on a loaded machine) is
  // reported, and the x drift columns then repeat the raw prediction.
  core::StatusOr<zellige::Profile> scaled =
      zellige::DriftScaledProfile(*cost.profile(), drift_probe, probe_rank_s);
  const zellige::Profile now_profile = scaled.ok() ? *scaled : *cost.profile();
  const std::unique_ptr<zellige::CostModel> now_cost =
      zellige::MakeProfileCostModel(std::make_shared<const zellige::Profile>(now_profile));
  std::vector<double> pred_t, meas_t, pred_m, meas_m, corr_t, uniform_t;
  Json plans = Json::array();
  core::Table t({"plan", "splits", "tokens", "pred s", "meas s", "err %", "x drift s", "err %",
                 "pred MiB", "meas MiB", "err %"});
  for (size_t i = 0; i < cases.size(); ++i) {
    const zellige::ValidationCase& c = cases[i];
    ASSIGN_OR_RETURN(zellige::SimResult sim, zellige::Simulate(c.plan, c.batch, cost));
    ASSIGN_OR_RETURN(zellige::SimResult now_sim, zellige::Simulate(c.plan, c.batch, *now_cost));
    const zellige::engine::PlanMeasurement& m = measured[i];
    if (!m.memory_measured) {
      return core::FailedPrecondition(
          "this build does not count heap allocations (sanitizer build?); validate with the "
          "release build");
    }
    const double mt = m.MedianMakespanS(), mm = static_cast<double>(m.MaxPeakBytes());
    pred_t.push_back(sim.makespan_s);
    corr_t.push_back(now_sim.makespan_s);
    uniform_t.push_back(sim.makespan_s * drift);
    meas_t.push_back(mt);
    pred_m.push_back(sim.peak_mem_bytes);
    meas_m.push_back(mm);
    t.AddRow({c.name, std::to_string(zellige::SplitCount(c.plan)),
              std::to_string(c.batch.total_tokens()), core::Fixed(sim.makespan_s, 3),
              core::Fixed(mt, 3), core::Fixed(100 * (sim.makespan_s - mt) / mt, 1),
              core::Fixed(corr_t.back(), 3), core::Fixed(100 * (corr_t.back() - mt) / mt, 1),
              core::Fixed(sim.peak_mem_bytes / kMiB, 1), core::Fixed(mm / kMiB, 1),
              core::Fixed(100 * (sim.peak_mem_bytes - mm) / mm, 2)});
    plans.push_back({{"name", c.name},
                     {"splits", zellige::SplitCount(c.plan)},
                     {"tokens", c.batch.total_tokens()},
                     {"predicted_makespan_s", sim.makespan_s},
                     {"measured_makespan_s", mt},
                     {"drift_corrected_makespan_s", corr_t.back()},
                     {"predicted_peak_bytes", sim.peak_mem_bytes},
                     {"measured_peak_bytes", mm},
                     {"ranks", RanksJson(m, sim)},
                     {"plan", zellige::ToJson(c.plan, c.batch)}});
  }
  if (me != 0) return Status::Ok();
  ASSIGN_OR_RETURN(zellige::PredictionError et, zellige::ComparePredictions(pred_t, meas_t));
  ASSIGN_OR_RETURN(zellige::PredictionError em, zellige::ComparePredictions(pred_m, meas_m));
  ASSIGN_OR_RETURN(zellige::PredictionError ec, zellige::ComparePredictions(corr_t, meas_t));
  ASSIGN_OR_RETURN(zellige::PredictionError eu, zellige::ComparePredictions(uniform_t, meas_t));
  std::string factors;
  for (double f : now_profile.rank_time_factors) {
    factors += (factors.empty() ? "" : ", ") + core::Fixed(f, 3);
  }
  if (!scaled.ok()) factors = "none (" + scaled.status().message() + "; x drift = raw)";
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const bool over = static_cast<unsigned>(n) > cores;
  std::printf("validate: %zu plans at %d ranks%s, profile %s\n", cases.size(), n,
              over ? " (OVERSUBSCRIBED: more ranks than cores)" : "", a.job.profile_path.c_str());
  std::printf("%s", t.Render().c_str());
  std::printf("step makespan: MAE %.3f s, MAPE %.2f%% (max %.1f%%)\n", et.mae, et.mape_percent,
              et.max_ape_percent);
  std::printf(
      "drift probe %s: measured %.3f s, the profiler measured %.3f s: machine speed factor "
      "%.3f (the cost model predicts %.3f s for it); predictions x this factor: MAPE %.2f%% "
      "(max %.1f%%)\n"
      "per-rank drift (probe forward + backward now / profiled): rank time factors %s\n"
      "step makespan, cost model with these rank factors (x drift columns): MAE %.3f s, MAPE "
      "%.2f%% (max %.1f%%)\n",
      probe.name.c_str(), probe_meas, drift_probe.profiled_makespan_s, drift, probe_sim.makespan_s,
      eu.mape_percent, eu.max_ape_percent, factors.c_str(), ec.mae, ec.mape_percent,
      ec.max_ape_percent);
  std::printf("peak allocated memory: MAE %.2f MiB, MAPE %.2f%% (max %.2f%%)\n", em.mae / kMiB,
              em.mape_percent, em.max_ape_percent);
  std::printf(
      "(measured on this machine: real SmallDit training steps over MPI, median of %d "
      "steps; predicted: profile-priced cost model + simulator)\n",
      a.job.repeats);
  if (!a.json_path.empty()) {
    Json out = {{"label", "measured"},
                {"profile", a.job.profile_path},
                {"provenance", cost.cluster().provenance},
                {"ranks", n},
                {"oversubscribed", over},
                {"repeats", a.job.repeats},
                {"token_scale", a.token_scale},
                {"makespan",
                 {{"mae_s", et.mae},
                  {"mape_percent", et.mape_percent},
                  {"max_ape_percent", et.max_ape_percent}}},
                {"drift_probe",
                 {{"name", probe.name},
                  {"measured_makespan_s", probe_meas},
                  {"profiled_makespan_s", drift_probe.profiled_makespan_s},
                  {"predicted_makespan_s", probe_sim.makespan_s},
                  {"factor", drift},
                  {"uniform_mape_percent", eu.mape_percent},
                  {"rank_compute_s", probe_rank_s},
                  {"profiled_compute_s", drift_probe.profiled_compute_s},
                  {"rank_time_factors", now_profile.rank_time_factors},
                  {"rank_factors_error", scaled.ok() ? "" : scaled.status().message()},
                  {"ranks", RanksJson(measured.back(), probe_sim)}}},
                {"makespan_drift_corrected",
                 {{"mae_s", ec.mae},
                  {"mape_percent", ec.mape_percent},
                  {"max_ape_percent", ec.max_ape_percent}}},
                {"memory",
                 {{"mae_bytes", em.mae},
                  {"mape_percent", em.mape_percent},
                  {"max_ape_percent", em.max_ape_percent}}},
                {"plans", plans}};
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, out));
  }
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace

void AddZelligeValidate(CLI::App* z, Action* action) {
  auto a = std::make_shared<ValidateArgs>();
  CLI::App* c = z->add_subcommand(
      "validate",
      "Run the 21-plan protocol for real and compare with the profile's predictions (step "
      "makespan and peak allocated memory: MAE, MAPE)");
  AddProfileJobOptions(c, &a->job);
  c->add_option("--token-scale", a->token_scale,
                "multiply the protocol's token counts (15 s 1080p = 497,760) by this")
      ->capture_default_str();
  c->add_option("--json", a->json_path, "write every prediction and measurement here");
  c->callback([action, a] {
    *action = [a] {
      return RunProfileJob(a->job, [a](comm::Communicator& world, const zellige::CostModel& cost) {
        return ValidateOnWorld(*a, world, cost);
      });
    };
  });
}

}  // namespace tessera::cli
