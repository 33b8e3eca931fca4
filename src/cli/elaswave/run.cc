// `tessera elaswave run`: an elastic training job on this machine -- the coordinator and
// dp x pp x tp worker processes (no mpirun), faults from a file delivered as real signals, and a
// report of every step (loss, state digest, whether every holder of every slot agrees), every
// fault and every recovery split into its phases. --save-ref writes the per-step digests;
// --check compares a run with them bit for bit (the fault-free run is the usual reference).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "cli/elaswave/job_args.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "core/table.h"
#include "elaswave/launcher.h"

namespace tessera::cli {
namespace {

struct ElasWaveRunArgs {
  ElasWaveJobArgs job;
  std::string faults_path, save_ref, check_ref, json_path, trace_path;
};

core::Status RunElasWave(const ElasWaveRunArgs& a) {
  ASSIGN_OR_RETURN(elaswave::LaunchOptions o, ElasWaveLaunchOptions(a.job));
  elaswave::ElasticJobConfig& job = o.job;
  if (!a.faults_path.empty()) {
    ASSIGN_OR_RETURN(job.faults,
                     elaswave::LoadFaultPlan(a.faults_path, job.trainer.shape, job.steps));
  }
  core::Json reference;
  if (!a.check_ref.empty()) {
    ASSIGN_OR_RETURN(reference, core::ReadJsonFile(a.check_ref));
  }
  RETURN_IF_ERROR(elaswave::CheckLaunchable(job));
  RETURN_IF_ERROR(PrepareRunDirectory(a.job, o));
  ASSIGN_OR_RETURN(const elaswave::JobResult r, elaswave::LaunchElasticJob(o));
  core::Status check;
  if (!a.check_ref.empty()) check = elaswave::CheckAgainstReference(r, reference, a.check_ref);
  core::Table steps({"step", "loss", "state digest", "holders agree"});
  for (const auto& s : r.steps) {
    steps.AddRow({std::to_string(s.step), core::Fixed(s.loss, 6), fmt::format("{:016x}", s.digest),
                  s.holders_agree ? "yes" : "NO"});
  }
  std::printf("%s", steps.Render().c_str());
  if (!r.faults.empty()) {
    core::Table f({"fault", "what", "delivered"});
    for (const auto& x : r.faults) {
      f.AddRow({std::to_string(x.index), x.what, x.delivered_s >= 0 ? "yes" : "no"});
    }
    std::printf("\n%s", f.Render().c_str());
  }
  if (!r.recoveries.empty()) {
    core::Table rt({"epoch", "dead", "redo step", "detect s", "replanned s", "resumed s",
                    "committed s", "step after s"});
    for (const auto& x : r.recoveries) {
      rt.AddRow({std::to_string(x.epoch), fmt::format("{}", fmt::join(x.dead, ",")),
                 std::to_string(x.redo_step), SecondsCell(x.After(x.detect_s)),
                 SecondsCell(x.After(x.installed_s)), SecondsCell(x.After(x.resumed_s)),
                 SecondsCell(x.After(x.committed_s)), SecondsCell(x.post_change_step_s)});
    }
    std::printf("\nrecoveries (seconds after the signal; measured):\n%s", rt.Render().c_str());
  }
  bool agree = true;
  for (const auto& s : r.steps) agree = agree && s.holders_agree;
  std::printf("\n%s in %.1f s; every holder of every slot agrees at every step: %s\n",
              r.exit_code == 0 ? "finished" : "FAILED", r.wall_s, agree ? "yes" : "NO");
  elaswave::LossDeviation deviation;
  if (!a.check_ref.empty()) {
    ASSIGN_OR_RETURN(deviation, elaswave::CompareLoss(r, reference, a.check_ref));
    std::printf("bitwise equal to %s: %s\n", a.check_ref.c_str(), check.ok() ? "yes" : "NO");
    std::printf("loss deviation from it: mean %.3g, max %.3g (|loss - ref| / ref over %d steps)\n",
                deviation.mean, deviation.max, deviation.steps);
  }
  if (!a.save_ref.empty()) {
    RETURN_IF_ERROR(core::WriteJsonFile(a.save_ref, elaswave::ReferenceToJson(r)));
    std::printf("wrote %s\n", a.save_ref.c_str());
  }
  if (!a.json_path.empty()) {
    core::Json j = r.ToJson();
    j["run_dir"] = job.run_dir;
    if (!a.check_ref.empty()) {
      j["bitwise_equal_to_reference"] = check.ok();
      j["loss_deviation"] = {
          {"mean", deviation.mean}, {"max", deviation.max}, {"steps", deviation.steps}};
    }
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  if (!a.trace_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.trace_path, r.trace));
  if (r.exit_code != 0) return core::FailedPrecondition(r.failure);
  if (!agree) return core::Internal("holders of a slot disagree on its state (a bug)");
  // The torchft policy changes the batch: differing from the reference is its documented result.
  if (o.job.policy == elaswave::RecoveryPolicy::kTorchFt) return core::Status::Ok();
  return check;
}

}  // namespace

void AddElasWaveRun(CLI::App* elaswave, Action* action) {
  auto a = std::make_shared<ElasWaveRunArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = elaswave->add_subcommand(
      "run", "Train dp x pp x tp processes of SmallGpt that survive kill -9 and SIGSTOP");
  AddElasWaveJobOptions(c, &a->job, paths.get());
  paths->Input(c, "--faults", &a->faults_path, "a fault file (see docs/elaswave.md)");
  paths->Output(c, "--save-ref", &a->save_ref, "write the per-step state digests here");
  paths->Input(c, "--check", &a->check_ref, "compare every step's state with this reference");
  paths->Output(c, "--json", &a->json_path, "write the results as JSON here");
  paths->Output(c, "--trace", &a->trace_path,
                "write a Chrome/Perfetto trace of every rank's steps and recoveries here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunElasWave(*a); }); });
}

}  // namespace tessera::cli
