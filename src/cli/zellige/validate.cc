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
// factor of its forward + backward alone (zellige::DriftScaledProfile); the solo probe (rank 0
// alone) gives the solo speed-up now. The headline makespan figure is the calibrated one: the
// cost model with those rank factors and that solo speed-up (the "x drift" columns), i.e. the
// profile brought to the machine's speed at validation time, so that a
// machine slower or faster than when it was profiled (background load, a drifting VM) is not
// counted as model error; the uncalibrated figure and the uniform factor's follow it.
// --json writes every number. Ranks beyond the machine's cores are labelled oversubscribed.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/zellige/profile_job.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "core/units.h"
#include "zellige/engine/validation.h"

namespace tessera::cli {

using core::Status;

namespace {

struct ValidateArgs {
  ProfileJobArgs job;
  double token_scale = 1.0 / 96;
  std::string json_path;
};

core::Table PlanTable(const zellige::ValidationReport& r) {
  core::Table t({"plan", "splits", "tokens", "pred s", "meas s", "err %", "x drift s", "err %",
                 "pred MiB", "meas MiB", "err %"});
  for (const zellige::ValidationRow& row : r.rows) {
    const double mt = row.measured_makespan_s, mm = row.measured_peak_bytes;
    const double pt = row.predicted_makespan_s, ct = row.drift_corrected_makespan_s;
    const double pm = row.predicted_peak_bytes;
    t.AddRow({row.name, std::to_string(row.splits), std::to_string(row.tokens), core::Fixed(pt, 3),
              core::Fixed(mt, 3), core::Fixed(100 * (pt - mt) / mt, 1), core::Fixed(ct, 3),
              core::Fixed(100 * (ct - mt) / mt, 1), core::Fixed(pm / core::kMiB, 1),
              core::Fixed(mm / core::kMiB, 1), core::Fixed(100 * (pm - mm) / mm, 2)});
  }
  return t;
}

void PrintReport(const zellige::ValidationReport& r) {
  std::string factors;
  for (double f : r.drift.rank_time_factors) {
    factors += (factors.empty() ? "" : ", ") + core::Fixed(f, 3);
  }
  if (!r.drift.rank_factors_error.empty()) {
    factors = "none (" + r.drift.rank_factors_error + "; x drift = raw)";
  }
  std::printf("validate: %zu plans at %d ranks%s, profile %s\n", r.rows.size(), r.ranks,
              r.oversubscribed ? " (OVERSUBSCRIBED: more ranks than cores)" : "",
              r.profile_path.c_str());
  std::printf("%s", PlanTable(r).Render().c_str());
  const core::PredictionError &et = r.makespan, &eu = r.makespan_uniform;
  const core::PredictionError &ec = r.makespan_drift_corrected, &em = r.memory;
  // The headline: predictions calibrated to the machine's speed now by the drift probe's
  // per-rank factors (the probe is not one of the plans, and is measured interleaved with them);
  // the uncalibrated figure follows it.
  std::printf(
      "step makespan, calibrated (x drift columns: the cost model with the probe's rank time "
      "factors %s): MAE %.3f s, MAPE %.2f%% (90%% bootstrap interval over the plans "
      "%.2f-%.2f%%; max %.1f%%)\n",
      factors.c_str(), ec.mae, ec.mape_percent, ec.mape_p5_percent, ec.mape_p95_percent,
      ec.max_ape_percent);
  std::printf(
      "step makespan, uncalibrated (the profile as measured): MAE %.3f s, MAPE %.2f%% (90%% "
      "bootstrap interval %.2f-%.2f%%; max %.1f%%)\n",
      et.mae, et.mape_percent, et.mape_p5_percent, et.mape_p95_percent, et.max_ape_percent);
  std::printf(
      "drift probe %s: measured %.3f s, the profiler measured %.3f s: machine speed factor "
      "%.3f (the cost model predicts %.3f s for it); predictions x this one factor: MAPE "
      "%.2f%% (max %.1f%%)\n",
      r.probe_name.c_str(), r.probe_measured_makespan_s, r.probe_profiled_makespan_s,
      r.drift.factor, r.probe_predicted_makespan_s, eu.mape_percent, eu.max_ape_percent);
  if (r.drift.solo_speedup_now > 0) {
    std::printf(
        "solo probe: a rank alone runs %.3fx faster than with every rank busy now (the profile "
        "measured %.3fx); the calibrated predictions use the value measured now\n",
        r.drift.solo_speedup_now, r.drift.solo_speedup_profiled);
  }
  std::printf(
      "peak allocated memory: MAE %.2f MiB, MAPE %.2f%% (90%% bootstrap interval %.2f-%.2f%%; "
      "max %.2f%%)\n",
      em.mae / core::kMiB, em.mape_percent, em.mape_p5_percent, em.mape_p95_percent,
      em.max_ape_percent);
  std::printf(
      "(measured on this machine: real SmallDit training steps over MPI, median of %d "
      "steps; predicted: profile-priced cost model + simulator)\n",
      r.repeats);
}

Status ValidateOnWorld(const ValidateArgs& a, comm::Communicator& world,
                       const zellige::CostModel& cost) {
  zellige::engine::ValidationOptions o;
  o.token_scale = a.token_scale;
  CopyJobOptions(a.job, &o);
  RankZeroProgress progress(world, "validate");
  ASSIGN_OR_RETURN(zellige::ValidationReport report,
                   NameFlags(zellige::engine::RunValidation(world, o, cost, std::ref(progress)),
                             {{"token_scale", "--token-scale"}}));
  progress.Done();
  if (world.rank() != 0) return Status::Ok();
  PrintReport(report);
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, ToJson(report)));
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace

void AddZelligeValidate(CLI::App* z, Action* action) {
  auto a = std::make_shared<ValidateArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = z->add_subcommand(
      "validate",
      "Run the 21-plan protocol for real and compare with the profile's predictions (step "
      "makespan and peak allocated memory: MAE, MAPE)");
  AddProfileJobOptions(c, &a->job, paths.get());
  c->add_option("--token-scale", a->token_scale,
                "multiply the protocol's token counts (15 s 1080p = 497,760) by this")
      ->check(PositiveNumber(1000))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write every prediction and measurement here");
  c->callback([action, a, paths] {
    *action = Checked(paths, [a] {
      return RunProfileJob(a->job, [a](comm::Communicator& world, const zellige::CostModel& cost) {
        return ValidateOnWorld(*a, world, cost);
      });
    });
  });
}

}  // namespace tessera::cli
