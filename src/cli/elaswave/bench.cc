// `tessera elaswave bench`: consistency and MTTR over many faults -- a fault-free reference run,
// then --runs runs of the same job, each with one kill -9 (or SIGSTOP with --action stop) at a
// random rank, step, phase and micro-batch drawn from --fault-seed; every run is compared with
// the reference bit for bit at every step, and the recovery phases are summarised (measured).
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/elaswave/job_args.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "core/table.h"
#include "elaswave/fault_bench.h"

namespace tessera::cli {
namespace {

struct ElasWaveBenchArgs {
  ElasWaveJobArgs job;
  int64_t runs = 20;
  int64_t fault_seed = 1;
  std::string action = "kill";
  std::string json_path;
};

core::Status RunElasWaveBench(const ElasWaveBenchArgs& a) {
  elaswave::FaultBenchOptions o;
  ASSIGN_OR_RETURN(o.launch, ElasWaveLaunchOptions(a.job));
  RETURN_IF_ERROR(PrepareRunDirectory(a.job, o.launch));
  o.runs = static_cast<int>(a.runs);
  o.seed = static_cast<uint64_t>(a.fault_seed);
  o.action = a.action == "stop" ? elaswave::FaultAction::kStop : elaswave::FaultAction::kKill;
  ASSIGN_OR_RETURN(const elaswave::FaultBenchResult r, elaswave::RunFaultBench(o));
  core::Table t({"run", "fault", "bitwise equal", "loss dev", "detect s", "replanned s",
                 "resumed s", "committed s", "step after s"});
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& x = r.runs[i];
    t.AddRow({std::to_string(i), x.fault.Describe(), x.bitwise_equal ? "yes" : "NO",
              fmt::format("{:.2e}", x.loss.mean),
              SecondsCell(x.recovery.After(x.recovery.detect_s)),
              SecondsCell(x.recovery.After(x.recovery.installed_s)),
              SecondsCell(x.recovery.After(x.recovery.resumed_s)),
              SecondsCell(x.recovery.After(x.recovery.committed_s)),
              SecondsCell(x.recovery.post_change_step_s)});
  }
  std::printf("%s", t.Render().c_str());
  core::Table s({"phase (seconds after the signal)", "runs", "p50", "max"});
  const auto row = [&](const char* name, const elaswave::PhaseStats& p) {
    s.AddRow({name, std::to_string(p.count), SecondsCell(p.p50_s), SecondsCell(p.max_s)});
  };
  row("detect (first survivor saw the abort)", r.detect);
  row("replanned (last survivor installed the plan)", r.replanned);
  row("resumed (all survivors computing): MTTR_resume", r.resumed);
  row("committed (the redone step): MTTR_commit", r.committed);
  row("committed minus the step after the change", r.committed_net);
  std::printf("\nmeasured on this machine:\n%s", s.Render().c_str());
  std::printf("\nbitwise equal to the fault-free run at every step: %d of %zu runs\n",
              r.bitwise_equal, r.runs.size());
  std::printf(
      "loss deviation from it (mean |loss - ref| / ref over the steps): mean %.3g, max "
      "%.3g\n",
      r.mean_loss_deviation, r.max_loss_deviation);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    if (!r.runs[i].note.empty()) std::printf("run %zu: %s\n", i, r.runs[i].note.c_str());
  }
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, r.ToJson()));
  // The torchft policy changes the batch by design: only elaswave must be bitwise equal.
  if (o.launch.job.policy == elaswave::RecoveryPolicy::kElasWave &&
      r.bitwise_equal != static_cast<int>(r.runs.size())) {
    return core::FailedPrecondition(
        fmt::format("{} of {} runs were not bitwise equal to the fault-free run",
                    r.runs.size() - static_cast<size_t>(r.bitwise_equal), r.runs.size()));
  }
  return core::Status::Ok();
}

}  // namespace

void AddElasWaveBench(CLI::App* elaswave, Action* action) {
  auto a = std::make_shared<ElasWaveBenchArgs>();
  a->job.steps = 8;
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = elaswave->add_subcommand(
      "bench", "Consistency and MTTR: runs with one random fault each, against a fault-free run");
  AddElasWaveJobOptions(c, &a->job, paths.get());
  c->add_option("--runs", a->runs, "runs with a fault")
      ->transform(Integer(1, 1000))
      ->capture_default_str();
  c->add_option("--fault-seed", a->fault_seed, "seed of the random faults")
      ->transform(Seed())
      ->capture_default_str();
  c->add_option("--action", a->action, "kill (kill -9) or stop (SIGSTOP)")
      ->check(CLI::IsMember({"kill", "stop"}))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write the results as JSON here");
  c->callback(
      [action, a, paths] { *action = Checked(paths, [a] { return RunElasWaveBench(*a); }); });
}

}  // namespace tessera::cli
