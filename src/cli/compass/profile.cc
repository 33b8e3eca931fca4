// `tessera compass profile`: measure this machine for Compass's models on one topology and TP
// degree (compass/profile_run.h) and write the profile file (compass/profile.h).
//
//   tessera compass profile --out P [--ranks 2] [--topology a6000x8|FILE] [--grid quick|FILE]
//       [--repeats 7] [--time-scale S]
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
#include "compass/engine/link_runtime.h"
#include "compass/engine/overlap_grid.h"
#include "compass/engine/profile_run.h"
#include "core/table.h"
#include "hw/machine.h"
#include "hw/topology.h"
#include "kernels/gemm.h"

namespace tessera::cli {

using core::Status;

namespace {

struct CompassProfileArgs {
  int ranks = 2;
  std::string topology = "a6000x8";
  std::string grid = "quick";
  int repeats = 7;
  double time_scale = 0;  // 0: measure
  std::string out_path;
  double op_timeout_s = 600;
};

std::string MicrosecondsText(double s) { return core::Fixed(s * 1e6, 1); }

void PrintCompassProfile(const compass::CompassProfile& p) {
  std::printf("topology %s, TP %d, time scale s = %.1f (%s); measured on %s; device us\n",
              p.topology.c_str(), p.ranks, p.time_scale, p.time_scale_source.c_str(),
              p.machine.c_str());
  std::printf("GEMMs: %zu shapes (whole operators and their parts at every feasible degree)\n",
              p.gemms.size());
  if (!p.links.empty()) {
    core::Table t({"collective", "algorithm", "block KiB", "measured us", "modeled us", "error"});
    for (const compass::ProfiledLink& l : p.links) {
      t.AddRow({l.kind, l.algo, std::to_string(l.block_wire_bytes >> 10),
                MicrosecondsText(l.measured_s), MicrosecondsText(l.modeled_s),
                l.modeled_s > 0 ? fmt::format("{:+.1f}%", 100 * (l.measured_s / l.modeled_s - 1))
                                : std::string("-")});
    }
    std::printf("links (median of %d):\n%s", p.repeats, t.Render().c_str());
  }
  const compass::ContentionFigure& c = p.contention;
  std::printf(
      "contention: GEMM %lldx%lldx%lld alone %s us, beside the rank's collectives %s us: "
      "kappa %.2f\n",
      static_cast<long long>(c.m), static_cast<long long>(c.n), static_cast<long long>(c.k),
      MicrosecondsText(c.alone_s).c_str(), MicrosecondsText(c.overlapped_s).c_str(), c.kappa());
  core::Table ops({"operator", "op", "T(d) measured us", "A us", "B us", "C us", "d*"});
  for (const compass::ProfiledOperator& o : p.operators) {
    std::string t;
    for (const auto& [d, s] : o.t_by_d) {
      if (!t.empty()) t += ' ';
      t += fmt::format("{}:{}", d, MicrosecondsText(s));
    }
    ops.AddRow({o.label, o.op, t, MicrosecondsText(o.fit.a), MicrosecondsText(o.fit.b),
                MicrosecondsText(o.fit.c), std::to_string(o.d_star)});
  }
  std::printf("decomposition (fit T(d) = A d + B + C/d on d in {1,2,4,8}):\n%s",
              ops.Render().c_str());
  core::Table cls({"class", "closed form: alpha us", "delta us", "kappa", "pipeline: alpha us",
                   "delta us", "kappa"});
  for (const auto& [name, m] : p.classes) {
    cls.AddRow({name, MicrosecondsText(m.degree.alpha_s), MicrosecondsText(m.degree.delta_s),
                core::Fixed(m.degree.kappa, 2), MicrosecondsText(m.pipeline.alpha_s),
                MicrosecondsText(m.pipeline.delta_s), core::Fixed(m.pipeline.kappa, 2)});
  }
  std::printf("operator classes (fitted on every profiled operator):\n%s", cls.Render().c_str());
  core::Table ov({"strategy family", "class", "alpha us", "delta us", "kappa"});
  for (const auto& [key, o] : p.overheads) {
    ov.AddRow({compass::StrategyFamilyName(key.family), key.op_class, MicrosecondsText(o.alpha_s),
               MicrosecondsText(o.delta_s), core::Fixed(o.kappa, 2)});
  }
  std::printf("selector overheads (fitted on every profiled operator's measured runs):\n%s",
              ov.Render().c_str());
}

Status CompassProfileOnWorld(const CompassProfileArgs& a, comm::Communicator& world) {
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  ASSIGN_OR_RETURN(hw::Topology topology, hw::LoadTopology(a.topology));
  ASSIGN_OR_RETURN(compass::OverlapGrid grid, compass::LoadGrid(a.grid));
  compass::ProfileRunConfig o;
  ASSIGN_OR_RETURN(o.shapes, compass::GridShapes(grid, world.size()));
  o.degrees = grid.degrees;
  o.repeats = a.repeats;
  o.machine = hw::Summary(hw::DescribeThisMachine());
  std::optional<double> fixed;
  if (a.time_scale > 0) fixed = a.time_scale;
  ASSIGN_OR_RETURN(runtime::TimeScale scale, compass::AgreeTimeScale(world, topology, fixed));
  std::unique_ptr<RankZeroProgress> progress;
  o.stage = [&](const std::string& name) {
    if (progress) progress->Done();
    if (world.rank() == 0) std::fprintf(stderr, "\nstage: %s\n", name.c_str());
    progress = std::make_unique<RankZeroProgress>(world, name);
  };
  o.progress = [&](int done, int total) {
    if (progress) (*progress)(done, total);
  };
  // A line per profiled operator and per stage on stderr (kept by a log when not a TTY).
  o.config_done = [](int i, int count, const compass::OverlapConfigResult& c) {
    std::string line;
    for (const compass::OverlapRun& r : c.runs) {
      line += fmt::format(" {} {}", r.strategy, MicrosecondsText(r.median_s));
    }
    std::fprintf(stderr, "\n[%d/%d] %s (us):%s\n", i + 1, count, c.shape.label.c_str(),
                 line.c_str());
  };
  ASSIGN_OR_RETURN(compass::CompassProfile p,
                   compass::RunCompassProfile(world, topology, scale, o));
  if (progress) progress->Done();
  if (world.rank() != 0) return Status::Ok();
  RETURN_IF_ERROR(core::WriteJsonFile(a.out_path, ToJson(p)));
  PrintCompassProfile(p);
  std::printf("wrote %s\n", a.out_path.c_str());
  std::fflush(stdout);
  return Status::Ok();
}

Status RunCompassProfileCommand(const CompassProfileArgs& a) {
  RETURN_IF_ERROR(
      NameFlags(compass::CheckGridJob(a.topology, a.grid, a.ranks, 2), {{"ranks", "--ranks"}}));
  return RunMpiJob(a.ranks, a.op_timeout_s,
                   [&](comm::Communicator& world) { return CompassProfileOnWorld(a, world); });
}

}  // namespace

void AddCompassProfile(CLI::App* compass, Action* action) {
  auto a = std::make_shared<CompassProfileArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = compass->add_subcommand(
      "profile",
      "Measure this machine for Compass's models: GEMM time per part shape, link checks, the "
      "contention factor, decomposition fits, the selector's overheads; write them to a file");
  c->add_option("--ranks", a->ranks, "MPI ranks = TP degree = devices 0..N-1 (at least 2)")
      ->transform(Integer(2, 64))
      ->capture_default_str();
  AddTopologyOption(c, &a->topology, paths.get());
  c->add_option("--grid", a->grid,
                "the operators to profile: quick (48 configurations) or a grid JSON file (its "
                "degrees are swept; its strategies are not used)")
      ->capture_default_str();
  paths->RecordInput("--grid", &a->grid);
  c->add_option("--repeats", a->repeats, "timed runs of each measurement, interleaved")
      ->transform(Integer(1, 1000))
      ->capture_default_str();
  AddEmulatorOptions(c, &a->time_scale, &a->op_timeout_s);
  paths->Output(c, "--out", &a->out_path, "the profile file to write (JSON)")->required();
  c->callback([action, a, paths] {
    *action = Checked(paths, [a] { return RunCompassProfileCommand(*a); });
  });
}

}  // namespace tessera::cli
