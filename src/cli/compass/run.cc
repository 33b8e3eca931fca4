// `tessera compass run`: a small GPT trained with tensor and sequence parallelism on MPI ranks
// over a topology's emulated links, every TP operator run by an overlap strategy, or by the
// selector's pick per operator (`auto`); --check compares every step's loss with the
// single-process twin (compass/gpt_run.h).
//
//   tessera compass run [--ranks 2] [--topology a6000x8|FILE] [--model
//   gpt-small|gpt-medium|gpt-tiny]
//       [--strategy auto|none|te|fused-ring1|fused-ring2|fused-direct|decomp:D|mpi]
//       [--steps 10] [--batch 4] [--seq 256] [--check] [--compute real|modeled] [--profile P]
//       [--time-scale S] [--json F] [--trace F]
//
// Typed at a shell it re-runs itself under mpiexec with --ranks ranks (cli/mpi_launch.h).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "cli/compass/compass_options.h"
#include "cli/mpi_launch.h"
#include "cli/options.h"
#include "cli/rank_progress.h"
#include "compass/engine/gpt_run.h"
#include "compass/engine/link_runtime.h"
#include "compass/engine/overlap_strategy.h"
#include "core/json_util.h"
#include "core/table.h"
#include "hw/topology.h"
#include "kernels/gemm.h"

namespace tessera::cli {

using core::Status;

namespace {

struct CompassRunArgs {
  int ranks = 2;
  std::string topology = "a6000x8";
  std::string model = "gpt-small";
  std::string strategy = "auto";
  int steps = 10;
  int64_t batch = 4, seq = 256;
  bool check = false;
  std::string compute = "real";
  std::string profile;
  double time_scale = 0;  // 0: measure
  std::string json_path, trace_path;
  double op_timeout_s = 600;
};

std::string GptMs(double s) { return core::Fixed(s * 1e3, 3); }

void PrintGptRun(const compass::GptRun& r) {
  std::printf(
      "%s (%lld parameters per rank), TP %d on %s devices 0..%d, %lld x %lld tokens per step, "
      "strategy %s\n",
      r.model.c_str(), static_cast<long long>(r.parameters_per_rank), r.tp, r.topology.c_str(),
      r.tp - 1, static_cast<long long>(r.batch), static_cast<long long>(r.seq), r.strategy.c_str());
  std::printf("time scale s = %.1f (%s); %s; times in device ms\n", r.scale.scale,
              r.scale.source.c_str(),
              r.compute == runtime::ComputeMode::kModeled
                  ? "MODELED TP GEMMs (each sleeps for its profiled time; attention, norms, head "
                    "and optimizer compute; losses not meaningful)"
                  : "real GEMMs, one thread per rank");
  if (r.strategy == "auto") std::printf("overheads: %s\n", r.overheads_source.c_str());
  core::Table t({"operator", "kind", "M x N x K", "strategy", "predicted ms", "none ms",
                 "measured ms/step (rank 0)"});
  for (const compass::GptOpChoice& c : r.choices) {
    auto it = r.op_s.find(c.op);
    const double per_step = it == r.op_s.end() ? 0 : it->second / r.losses.size();
    t.AddRow({c.op, compass::TpOpKindName(c.shape.kind),
              fmt::format("{} x {} x {}", c.shape.m, c.shape.n, c.shape.k), c.strategy,
              c.predicted_s > 0 ? GptMs(c.predicted_s) : "-",
              c.predicted_s > 0 ? GptMs(c.none_s) : "-", GptMs(per_step)});
  }
  std::printf("%s", t.Render().c_str());
  core::Table s({"step", "loss", "single process", "step ms"});
  for (size_t i = 0; i < r.losses.size(); ++i) {
    s.AddRow({std::to_string(i + 1), core::Fixed(r.losses[i], 6),
              r.reference_losses.empty() ? "-" : core::Fixed(r.reference_losses[i], 6),
              GptMs(r.step_s[i])});
  }
  std::printf("%s", s.Render().c_str());
  std::printf("step time over steps %d..%zu: min %s, median %s, max %s ms\n",
              r.losses.size() > 1 ? 2 : 1, r.losses.size(), GptMs(r.step_summary.min).c_str(),
              GptMs(r.step_summary.median).c_str(), GptMs(r.step_summary.max).c_str());
  if (r.max_loss_rel_diff >= 0) {
    std::printf(
        "check: every step's loss equals the single process's within %.1e relative "
        "(tolerance 1e-5)\n",
        r.max_loss_rel_diff);
  }
  if (r.strategy == "auto") {
    std::printf("why:\n");
    for (const compass::GptOpChoice& c : r.choices) {
      std::printf("  %-11s %s: %s\n", c.op.c_str(), c.strategy.c_str(), c.reason.c_str());
    }
  }
}

// The library's run config from the command line (`profile` may be null).
compass::GptRunConfig RunConfigOf(const CompassRunArgs& a, const compass::CompassProfile* profile) {
  compass::GptRunConfig c;
  c.model = a.model;
  c.batch = a.batch;
  c.seq = a.seq;
  c.strategy = a.strategy;
  c.steps = a.steps;
  c.check = a.check;
  c.compute = a.compute == "modeled" ? runtime::ComputeMode::kModeled : runtime::ComputeMode::kReal;
  c.profile = profile;
  c.profile_name = "--profile " + a.profile;
  return c;
}

Status GptRunOnWorld(const CompassRunArgs& a, comm::Communicator& world) {
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  ASSIGN_OR_RETURN(hw::Topology topology, hw::LoadTopology(a.topology));
  std::optional<compass::CompassProfile> profile;
  if (!a.profile.empty()) {
    ASSIGN_OR_RETURN(profile, compass::LoadProfile(a.profile));
  }
  compass::GptRunConfig c = RunConfigOf(a, profile ? &*profile : nullptr);
  std::optional<double> fixed;
  if (a.time_scale > 0) fixed = a.time_scale;
  ASSIGN_OR_RETURN(runtime::TimeScale scale, compass::AgreeTimeScale(world, topology, fixed));
  RankZeroProgress progress(world, "training steps");
  c.progress = std::ref(progress);
  ASSIGN_OR_RETURN(compass::GptRun r, compass::RunGpt(world, topology, scale, c));
  progress.Done();
  if (world.rank() != 0) return Status::Ok();
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, ToJson(r)));
  if (!a.trace_path.empty()) RETURN_IF_ERROR(compass::GptStepTrace(r).Write(a.trace_path));
  PrintGptRun(r);
  std::fflush(stdout);
  return Status::Ok();
}

Status RunGptJob(const CompassRunArgs& a) {
  // What can be refused before ranks start (the library's own checks of a run): the
  // topology, the model, the strategy name, the batch shape and the profile.
  ASSIGN_OR_RETURN(hw::Topology topology, hw::LoadTopology(a.topology));
  std::optional<compass::CompassProfile> profile;
  if (!a.profile.empty()) {
    ASSIGN_OR_RETURN(profile, compass::LoadProfile(a.profile));
  }
  if (a.check && a.compute != "real") {
    return core::InvalidArgument(
        "--check needs --compute real (modeled GEMMs do not write their outputs)");
  }
  RETURN_IF_ERROR(NameFlags(
      compass::CheckGptRun(RunConfigOf(a, profile ? &*profile : nullptr), topology, a.ranks),
      {{"steps", "--steps"}}));
  return RunMpiJob(a.ranks, a.op_timeout_s,
                   [&](comm::Communicator& world) { return GptRunOnWorld(a, world); });
}

}  // namespace

void AddCompassRun(CLI::App* compass, Action* action) {
  auto a = std::make_shared<CompassRunArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = compass->add_subcommand(
      "run",
      "Train a small GPT with tensor parallelism on MPI ranks, every TP operator run by an "
      "overlap strategy (or the selector's pick per operator: auto); --check against one process");
  c->add_option("--ranks", a->ranks, "MPI ranks = TP degree = devices 0..N-1")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  AddTopologyOption(c, &a->topology, paths.get());
  c->add_option("--model", a->model, "gpt-small, gpt-medium or gpt-tiny")->capture_default_str();
  c->add_option("--strategy", a->strategy,
                "auto (the selector per operator) or none, te, fused-ring1, fused-ring2, "
                "fused-direct, decomp:D, mpi")
      ->capture_default_str();
  c->add_option("--steps", a->steps, "training steps")
      ->transform(Integer(1, 1000))
      ->capture_default_str();
  c->add_option("--batch", a->batch, "sequences per step")
      ->transform(Integer(1, 4096))
      ->capture_default_str();
  c->add_option("--seq", a->seq, "tokens per sequence (<= the model's max_seq)")
      ->transform(Integer(1, 1 << 16))
      ->capture_default_str();
  c->add_flag("--check", a->check,
              "first train the single-process twin on rank 0 and require every step's loss to "
              "match within 1e-5 relative");
  c->add_option("--compute", a->compute,
                "real GEMMs, or modeled: each TP GEMM sleeps for its profiled time (for ranks "
                "that outnumber cores; losses are then not meaningful)")
      ->check(CLI::IsMember({"real", "modeled"}))
      ->capture_default_str();
  c->add_option("--profile", a->profile,
                "a profile from `tessera compass profile` on this topology and TP: the "
                "selector's overheads for auto");
  paths->RecordInput("--profile", &a->profile);
  AddEmulatorOptions(c, &a->time_scale, &a->op_timeout_s);
  paths->Output(c, "--json", &a->json_path, "write the run (choices, losses, step times) as JSON");
  paths->Output(c, "--trace", &a->trace_path,
                "write the last step's TP operators on every rank as a Perfetto trace");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunGptJob(*a); }); });
}

}  // namespace tessera::cli
