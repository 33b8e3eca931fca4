// `tessera elaswave plan`: what ElasWave would do if the --dead ranks died, without starting
// anything -- the live pipelines with each stage's slots and modeled cost per micro-batch, the
// micro-batches per pipeline, the state transfers, the DVFS speed per stage and the predicted
// step, power and energy per step with and without DVFS (elaswave/recovery_report.h; every
// figure modeled). --json writes the whole report.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/elaswave/job_args.h"
#include "cli/options.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/table.h"
#include "elaswave/recovery_report.h"
#include "elaswave/trainer.h"

namespace tessera::cli {
namespace {

struct ElasWavePlanArgs {
  ElasWaveJobArgs job;
  std::vector<int> dead;
  std::vector<double> dvfs_range = {0.6, 1.15};
  std::string json_path;
};

std::string SlotsCell(const elaswave::ReportStage& s, int num_blocks) {
  if (s.slot_end - s.slot_begin == 1) {
    return fmt::format("[{}, {}) {}", s.slot_begin, s.slot_end,
                       elaswave::SlotName(s.slot_begin, num_blocks));
  }
  return fmt::format("[{}, {}) {}..{}", s.slot_begin, s.slot_end,
                     elaswave::SlotName(s.slot_begin, num_blocks),
                     elaswave::SlotName(s.slot_end - 1, num_blocks));
}

std::string Watts(double w) { return core::Fixed(w, 1); }

void PrintReport(const ElasWavePlanArgs& a, const elaswave::RecoveryReport& r) {
  const elaswave::JobShape& shape = r.shape;
  std::printf("%s, dp %d x pp %d x tp %d, %lld micro-batches of %lld sequences; dead: %s\n",
              a.job.model.c_str(), shape.dp, shape.pp, shape.tp,
              static_cast<long long>(shape.num_micro_batches()),
              static_cast<long long>(shape.micro_batch),
              fmt::format("{}", fmt::join(a.dead, ",")).c_str());
  std::printf(
      "\nlive pipelines after the change (epoch %lld; cost per micro-batch modeled from FLOPs):\n",
      static_cast<long long>(r.plan.epoch));
  core::Table t({"pipeline", "replica", "stage", "ranks", "slots", "s per micro-batch",
                 "micro-batches", "DVFS f"});
  for (const elaswave::ReportStage& s : r.stages) {
    const elaswave::PlanPipeline& p = r.plan.pipelines[s.pipeline];
    const bool computes = p.micro_batches > 0;
    t.AddRow({std::to_string(s.pipeline), std::to_string(p.replica), std::to_string(s.stage),
              fmt::format("{}", fmt::join(s.ranks, ",")), SlotsCell(s, shape.num_blocks),
              fmt::format("{:.4f}", s.micro_batch_s), std::to_string(p.micro_batches),
              computes && r.dvfs_feasible ? fmt::format("{:.3f}", s.frequency) : "-"});
  }
  std::printf("%s", t.Render().c_str());
  std::printf(
      "spares (live, computing nothing): %s\n",
      r.plan.spares.empty() ? "none" : fmt::format("{}", fmt::join(r.plan.spares, ",")).c_str());

  std::printf("\ntransfers (state a new holder receives from a live one):\n");
  if (r.plan.transfers.empty()) {
    std::printf("none\n");
  } else {
    core::Table m({"slot", "tp rank", "source -> destination", "bytes"});
    for (const elaswave::StateTransfer& x : r.plan.transfers) {
      m.AddRow({fmt::format("{} ({})", x.slot, elaswave::SlotName(x.slot, shape.num_blocks)),
                std::to_string(x.tp_rank), fmt::format("{} -> {}", x.src, x.dst),
                std::to_string(x.bytes)});
    }
    std::printf("%s", m.Render().c_str());
  }
  std::printf("moved: %lld bytes (%s) in %zu transfers\n", static_cast<long long>(r.moved_bytes),
              core::FormatBytes(r.moved_bytes).c_str(), r.plan.transfers.size());

  std::printf("\nstep, power and energy per step (modeled):\n");
  core::Table s({"", "fault-free", "after, f = 1", "after, DVFS"});
  const auto dvfs = [&](double v, int digits) {
    return r.dvfs_feasible ? core::Fixed(v, digits) : std::string("-");
  };
  s.AddRow({"step s (1F1B)", core::Fixed(r.fault_free_step_s, 4), core::Fixed(r.step_s, 4),
            dvfs(r.step_dvfs_s, 4)});
  s.AddRow({"power W", Watts(r.power_cap_w), Watts(r.power_f1_w), dvfs(r.dvfs.power_w, 1)});
  s.AddRow({"energy per step J", core::Fixed(r.fault_free_energy_j, 2),
            core::Fixed(r.energy_f1_j, 2), dvfs(r.dvfs.energy_per_step_j, 2)});
  std::printf("%s", s.Render().c_str());
  std::printf(
      "DVFS: speeds in [%g, %g], %g W idle and %g W busy at f = 1 per device, power cap = "
      "the fault-free job's %s W: ",
      r.range.f_min, r.range.f_max, r.power.idle_w, r.power.peak_w, Watts(r.power_cap_w).c_str());
  if (r.dvfs_feasible) {
    std::printf("limited by %s\n", r.dvfs.limited_by.c_str());
  } else {
    std::printf("infeasible (%s); the figures at f = 1 stand\n", r.dvfs_reason.c_str());
  }
}

core::Status RunElasWavePlan(const ElasWavePlanArgs& a) {
  ASSIGN_OR_RETURN(const elaswave::LaunchOptions o, ElasWaveLaunchOptions(a.job));
  const elaswave::TrainerOptions& t = o.job.trainer;
  if (a.dvfs_range.size() != 2) {
    return core::InvalidArgument(fmt::format(
        "--dvfs-range: got {} values, give two: f_min,f_max (e.g. 0.6,1.15)", a.dvfs_range.size()));
  }
  elaswave::RecoveryReportOptions options;
  options.range = {a.dvfs_range[0], a.dvfs_range[1]};
  RETURN_IF_ERROR(elaswave::ValidateDvfsRange(options.range).WithPrefix("--dvfs-range"));
  const std::vector<elaswave::SlotCost> costs =
      elaswave::GptSlotCosts(elaswave::DimsOf(t.model, t.seq), t.shape.micro_batch, t.shape.tp);
  ASSIGN_OR_RETURN(const elaswave::RecoveryReport r,
                   NameFlags(elaswave::BuildRecoveryReport(t.shape, costs, a.dead, options),
                             {{"dead", "--dead"}}));
  PrintReport(a, r);
  if (!a.json_path.empty()) {
    core::Json j = r.ToJson();
    j["model"] = a.job.model;
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
    std::printf("wrote %s\n", a.json_path.c_str());
  }
  return core::Status::Ok();
}

}  // namespace

void AddElasWavePlan(CLI::App* elaswave, Action* action) {
  auto a = std::make_shared<ElasWavePlanArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = elaswave->add_subcommand("plan",
                                         "The recovery plan if ranks died: pipelines, transfers, "
                                         "DVFS speeds, predicted step (modeled)");
  AddElasWaveShapeOptions(c, &a->job, paths.get());
  ListOption(c, "--dead", &a->dead, "world ranks that die, comma separated (each once)",
             Integer(0, 1 << 20))
      ->required();
  ListOption(c, "--dvfs-range", &a->dvfs_range,
             "DVFS speed range f_min,f_max relative to nominal 1, each in (0, 2]",
             PositiveNumber(2));
  paths->Output(c, "--json", &a->json_path, "write the report as JSON here");
  c->callback(
      [action, a, paths] { *action = Checked(paths, [a] { return RunElasWavePlan(*a); }); });
}

}  // namespace tessera::cli
