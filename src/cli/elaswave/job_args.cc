#include "cli/elaswave/job_args.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/input_file.h"
#include "core/table.h"

namespace tessera::cli {

core::StatusOr<std::string> TesseraBinaryPath() {
  char exe[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0) return core::Internal("cannot find the tessera binary (/proc/self/exe)");
  return std::string(exe, static_cast<size_t>(len));
}

core::StatusOr<elaswave::LaunchOptions> ElasWaveLaunchOptions(const ElasWaveJobArgs& a) {
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
  // The processes read the job file under the same input limit: a bad $TESSERA_MAX_INPUT_MB
  // must stop the command here, not every process it would start.
  RETURN_IF_ERROR(core::MaxInputBytes().status());
  job.steps = a.steps;
  ASSIGN_OR_RETURN(job.policy, elaswave::ParseRecoveryPolicy(a.policy));
  job.transport = "ucx";
  job.heartbeat_timeout_s = a.heartbeat_timeout_s;
  job.op_timeout_s = a.op_timeout_s;
  job.recovery_timeout_s = a.recovery_timeout_s;
  job.coordinator_timeout_s = a.coordinator_timeout_s;
  ASSIGN_OR_RETURN(o.self_exe, TesseraBinaryPath());
  o.job_timeout_s = a.job_timeout_s;
  // Progress lines go to a terminal only, as core::ProgressBar's do: on a pipe or in a log,
  // stderr keeps the one error line of a failed run.
  if (!a.quiet && ::isatty(STDERR_FILENO) == 1) {
    o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  }
  return o;
}

std::string SecondsCell(double s) { return s < 0 ? "-" : core::Fixed(s, 3); }

core::Status PrepareRunDirectory(const ElasWaveJobArgs& a, elaswave::LaunchOptions& o) {
  elaswave::ElasticJobConfig& job = o.job;
  job.run_dir = a.run_dir;
  if (job.run_dir.empty()) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "tessera-elaswave-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return core::Internal("cannot create a run directory in /tmp");
    job.run_dir = tmpl;
  }
  std::fprintf(stdout, "run directory: %s%s\n", job.run_dir.c_str(),
               job.trainer.shape.processes() > static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))
                   ? fmt::format(" ({} processes on {} cores: oversubscribed)",
                                 job.trainer.shape.processes(), ::sysconf(_SC_NPROCESSORS_ONLN))
                         .c_str()
                   : "");
  return core::Status::Ok();
}

void AddElasWaveShapeOptions(CLI::App* c, ElasWaveJobArgs* a, CommandPaths* paths) {
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
  c->add_option("--global-batch", a->global_batch, "sequences per step")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--micro-batch", a->micro_batch, "sequences per micro-batch")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--seq", a->seq, "tokens per sequence (default: the model's positions)")
      ->transform(Integer(1, 1 << 16));
}

void AddElasWaveJobOptions(CLI::App* c, ElasWaveJobArgs* a, CommandPaths* paths) {
  AddElasWaveShapeOptions(c, a, paths);
  c->add_option("--processes", a->processes, "expected processes (checked against dp x pp x tp)")
      ->transform(Integer(1, 4096));
  c->add_option("--steps", a->steps, "training steps")
      ->transform(Integer(1, 1000000))
      ->capture_default_str();
  c->add_option("--dropout", a->dropout, "residual dropout probability")
      ->check(Number(0, 0.9))
      ->capture_default_str();
  c->add_option("--lr", a->learning_rate, "AdamW learning rate")
      ->check(Number(0, 1))
      ->capture_default_str();
  c->add_option("--seed", a->seed, "data seed")->transform(Seed())->capture_default_str();
  paths->OutputFolder(c, "--run-dir", &a->run_dir,
                      "where the processes write their logs (default: a new folder in /tmp)");
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
  c->add_option("--policy", a->policy,
                "elaswave (per-step recovery, batch kept), torchft (drop the replica, shrink the "
                "batch) or restart (every process again from the last disk checkpoint)")
      ->check(CLI::IsMember({"elaswave", "torchft", "restart"}))
      ->capture_default_str();
  c->add_flag("--quiet", a->quiet, "no progress lines on stderr");
}

}  // namespace tessera::cli
