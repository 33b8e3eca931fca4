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
#include "cli/options.h"
#include "core/json_util.h"
#include "core/table.h"
#include "elaswave/launcher.h"

namespace tessera::cli {
namespace {

struct ElasWaveRunArgs {
  std::string model = "gpt-mini";
  int dp = 2, pp = 2, tp = 2;
  int64_t processes = -1;
  int64_t global_batch = 32, micro_batch = 2, steps = 20, seq = -1;
  double dropout = 0.1, learning_rate = 1e-3;
  int64_t seed = 1;
  std::string faults_path, run_dir, save_ref, check_ref, json_path;
  double heartbeat_timeout_s = 1.0, op_timeout_s = 30, recovery_timeout_s = 60;
  double coordinator_timeout_s = 30, job_timeout_s = 900;
  bool quiet = false;
};

std::string SecondsCell(double s) { return s < 0 ? "-" : core::Fixed(s, 3); }

core::Status RunElasWave(const ElasWaveRunArgs& a) {
  elaswave::LaunchOptions o;
  elaswave::ElasticJobConfig& job = o.job;
  elaswave::TrainerOptions& t = job.trainer;
  ASSIGN_OR_RETURN(t.model, elaswave::LoadModel(a.model));
  t.model.dropout = static_cast<float>(a.dropout);
  t.seq = a.seq > 0 ? a.seq : t.model.max_seq;
  if (t.seq > t.model.max_seq) {
    return core::InvalidArgument(
        fmt::format("--seq: got {}, the model has {} positions", t.seq, t.model.max_seq));
  }
  t.shape.dp = a.dp;
  t.shape.pp = a.pp;
  t.shape.tp = a.tp;
  t.shape.num_blocks = static_cast<int>(t.model.num_layers);
  t.shape.global_batch = a.global_batch;
  t.shape.micro_batch = a.micro_batch;
  t.data_seed = static_cast<uint64_t>(a.seed);
  t.adamw.learning_rate = static_cast<float>(a.learning_rate);
  const core::Status shape = elaswave::ValidateJobShape(t.shape, static_cast<int>(a.processes));
  if (!shape.ok()) {
    std::string m = shape.message();
    for (const char* f : {"dp", "pp", "tp", "global-batch", "micro-batch", "processes"}) {
      if (m.rfind(std::string(f) + ":", 0) == 0) m = "--" + m;
    }
    return core::InvalidArgument(m);
  }
  RETURN_IF_ERROR(
      models::ValidateSmallGptConfig(t.model, a.tp).WithPrefix("--tp " + std::to_string(a.tp)));
  job.steps = a.steps;
  if (!a.faults_path.empty()) {
    ASSIGN_OR_RETURN(job.faults, elaswave::LoadFaultPlan(a.faults_path, t.shape, a.steps));
  }
  job.transport = "ucx";
  job.heartbeat_timeout_s = a.heartbeat_timeout_s;
  job.op_timeout_s = a.op_timeout_s;
  job.recovery_timeout_s = a.recovery_timeout_s;
  job.coordinator_timeout_s = a.coordinator_timeout_s;
  core::Json reference;
  if (!a.check_ref.empty()) {
    ASSIGN_OR_RETURN(reference, core::ReadJsonFile(a.check_ref));
  }
  job.run_dir = a.run_dir;
  if (job.run_dir.empty()) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "tessera-elaswave-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return core::Internal("cannot create a run directory in /tmp");
    job.run_dir = tmpl;
  }
  char exe[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0) return core::Internal("cannot find the tessera binary (/proc/self/exe)");
  o.self_exe = std::string(exe, static_cast<size_t>(len));
  o.job_timeout_s = a.job_timeout_s;
  if (!a.quiet) {
    o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  }
  std::fprintf(stderr, "run directory: %s%s\n", job.run_dir.c_str(),
               job.trainer.shape.processes() > static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))
                   ? fmt::format(" ({} processes on {} cores: oversubscribed)",
                                 job.trainer.shape.processes(), ::sysconf(_SC_NPROCESSORS_ONLN))
                         .c_str()
                   : "");
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
      const auto since = [&](double v) { return v < 0 || x.signal_s < 0 ? -1.0 : v - x.signal_s; };
      rt.AddRow({std::to_string(x.epoch), fmt::format("{}", fmt::join(x.dead, ",")),
                 std::to_string(x.redo_step), SecondsCell(since(x.detect_s)),
                 SecondsCell(since(x.installed_s)), SecondsCell(since(x.resumed_s)),
                 SecondsCell(since(x.committed_s)), SecondsCell(x.post_change_step_s)});
    }
    std::printf("\nrecoveries (seconds after the signal; measured):\n%s", rt.Render().c_str());
  }
  bool agree = true;
  for (const auto& s : r.steps) agree = agree && s.holders_agree;
  std::printf("\n%s in %.1f s; every holder of every slot agrees at every step: %s\n",
              r.exit_code == 0 ? "finished" : "FAILED", r.wall_s, agree ? "yes" : "NO");
  if (!a.check_ref.empty()) {
    std::printf("bitwise equal to %s: %s\n", a.check_ref.c_str(), check.ok() ? "yes" : "NO");
  }
  if (!a.save_ref.empty()) {
    RETURN_IF_ERROR(core::WriteJsonFile(a.save_ref, elaswave::ReferenceToJson(r)));
    std::printf("wrote %s\n", a.save_ref.c_str());
  }
  if (!a.json_path.empty()) {
    core::Json j = r.ToJson();
    j["run_dir"] = job.run_dir;
    if (!a.check_ref.empty()) j["bitwise_equal_to_reference"] = check.ok();
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  if (r.exit_code != 0) return core::FailedPrecondition(r.failure);
  if (!agree) return core::Internal("holders of a slot disagree on its state (a bug)");
  return check;
}

}  // namespace

void AddElasWaveRun(CLI::App* elaswave, Action* action) {
  auto a = std::make_shared<ElasWaveRunArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = elaswave->add_subcommand(
      "run", "Train dp x pp x tp processes of SmallGpt that survive kill -9 and SIGSTOP");
  c->add_option("--model", a->model,
                "a SmallGpt preset (gpt-mini, gpt-tiny, gpt-small) or a JSON file")
      ->capture_default_str();
  paths->RecordInput("--model", &a->model);
  c->add_option("--dp", a->dp, "data-parallel replicas")
      ->transform(Integer(1, 1024))
      ->capture_default_str();
  c->add_option("--pp", a->pp, "pipeline stages")
      ->transform(Integer(1, 1024))
      ->capture_default_str();
  c->add_option("--tp", a->tp, "tensor-parallel degree")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--processes", a->processes, "expected processes (checked against dp x pp x tp)")
      ->transform(Integer(1, 4096));
  c->add_option("--global-batch", a->global_batch, "sequences per step")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--micro-batch", a->micro_batch, "sequences per micro-batch")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--steps", a->steps, "training steps")
      ->transform(Integer(1, 1000000))
      ->capture_default_str();
  c->add_option("--seq", a->seq, "tokens per sequence (default: the model's positions)")
      ->transform(Integer(1, 1 << 16));
  c->add_option("--dropout", a->dropout, "residual dropout probability")
      ->check(Number(0, 0.9))
      ->capture_default_str();
  c->add_option("--lr", a->learning_rate, "AdamW learning rate")
      ->check(Number(0, 1))
      ->capture_default_str();
  c->add_option("--seed", a->seed, "data seed")->transform(Seed())->capture_default_str();
  paths->Input(c, "--faults", &a->faults_path, "a fault file (see docs/elaswave.md)");
  paths->OutputFolder(c, "--run-dir", &a->run_dir,
                      "where the processes write their logs (default: a new folder in /tmp)");
  paths->Output(c, "--save-ref", &a->save_ref, "write the per-step state digests here");
  paths->Input(c, "--check", &a->check_ref, "compare every step's state with this reference");
  paths->Output(c, "--json", &a->json_path, "write the results as JSON here");
  c->add_option("--heartbeat-timeout", a->heartbeat_timeout_s,
                "seconds without a heartbeat before a worker is declared dead")
      ->check(PositiveNumber(3600))
      ->capture_default_str();
  c->add_option("--op-timeout", a->op_timeout_s, "seconds a collective may wait")
      ->check(PositiveNumber(86400))
      ->capture_default_str();
  c->add_option("--recovery-timeout", a->recovery_timeout_s,
                "seconds a recovery may take before the job gives up")
      ->check(PositiveNumber(86400))
      ->capture_default_str();
  c->add_option("--coordinator-timeout", a->coordinator_timeout_s,
                "seconds workers wait for a lost coordinator to come back")
      ->check(PositiveNumber(86400))
      ->capture_default_str();
  c->add_option("--job-timeout", a->job_timeout_s, "seconds for the whole job (a hang guard)")
      ->check(PositiveNumber(86400))
      ->capture_default_str();
  c->add_flag("--quiet", a->quiet, "no progress lines on stderr");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunElasWave(*a); }); });
}

}  // namespace tessera::cli
