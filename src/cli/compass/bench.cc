// `tessera compass bench`: every overlap strategy on every TP operator of a grid, on MPI ranks
// over a topology's emulated links (compass/overlap_bench.h), with the figures of
// compass/overlap_summary.h.
//
//   tessera compass bench [--ranks 2] [--topology a6000x8|FILE] [--grid quick|FILE]
//       [--compute real|modeled] [--check] [--repeats 7] [--time-scale S] [--json F]
//
// Typed at a shell it re-runs itself under mpiexec with --ranks ranks (cli/mpi_launch.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/compass/compass_options.h"
#include "cli/mpi_launch.h"
#include "cli/options.h"
#include "cli/rank_progress.h"
#include "compass/engine/link_runtime.h"
#include "compass/engine/overlap_bench.h"
#include "compass/engine/overlap_grid.h"
#include "compass/engine/overlap_summary.h"
#include "compass/engine/selector_eval.h"
#include "core/json_util.h"
#include "core/table.h"
#include "hw/topology.h"
#include "kernels/gemm.h"

namespace tessera::cli {

using core::Status;

namespace {

struct CompassBenchArgs {
  int ranks = 2;
  std::string topology = "a6000x8";
  std::string grid = "quick";
  std::string compute = "real";
  bool check = false;
  int repeats = 7;
  double time_scale = 0;  // 0: measure
  std::string json_path;
  double op_timeout_s = 600;
};

std::string Ms(double s) { return core::Fixed(s * 1e3, 3); }

void Print(const compass::OverlapBench& b, const compass::OverlapSummary& sum,
           const compass::SelectorEvaluation* sel) {
  std::printf("topology %s, TP %d on devices 0..%d, time scale s = %.1f (%s)\n", b.topology.c_str(),
              b.ranks, b.ranks - 1, b.scale.scale, b.scale.source.c_str());
  std::printf("compute: %s; ring1 order %s, ring2 order %s\n",
              b.compute == runtime::ComputeMode::kModeled
                  ? "MODELED (emulated compute: each GEMM sleeps for its profiled time)"
                  : "real GEMMs, one thread per rank",
              core::Json(b.ring1_order).dump().c_str(), core::Json(b.ring2_order).dump().c_str());
  if (b.repeats > 0) {
    core::Table t({"configuration", "op", "GEMM ms", "coll ms (model)", "none", "fused-ring1",
                   "fused-ring2", "fused-direct", "te", "best decomp", "max check err"});
    for (const compass::OverlapConfigResult& c : b.configs) {
      auto cell = [&](const char* name) {
        const compass::OverlapRun* r = c.Find(name);
        return r != nullptr && r->timed ? Ms(r->median_s) : std::string("-");
      };
      const compass::OverlapRun* best = nullptr;
      double err = -1;
      for (const compass::OverlapRun& r : c.runs) {
        err = std::max(err, r.rel_error);
        if (r.degree > 0 && r.timed && (best == nullptr || r.median_s < best->median_s)) best = &r;
      }
      t.AddRow({c.shape.label, compass::TpOpKindName(c.shape.kind), Ms(c.gemm_s),
                Ms(c.modeled_collective_s), cell("none"), cell("fused-ring1"), cell("fused-ring2"),
                cell("fused-direct"), cell("te"),
                best ? Ms(best->median_s) + " (d=" + std::to_string(best->degree) + ")" : "-",
                err >= 0 ? fmt::format("{:.1e}", err) : "-"});
    }
    std::printf("%s", t.Render().c_str());
    std::printf(
        "measured device ms (median of %d, strategies interleaved; emulated wall time / s)\n",
        b.repeats);
    core::Table r({"ratio (time a / time b)", "configs", "min", "median", "max"});
    for (const auto& [k, v] : sum.ratios) {
      r.AddRow({k, std::to_string(v.count), core::Fixed(v.min, 2), core::Fixed(v.median, 2),
                core::Fixed(v.max, 2)});
    }
    std::printf("%s", r.Render().c_str());
    if (!sum.degree.empty()) {
      std::printf(
          "degree model (fit on d in {1,2,4,8}, exhaustive d <= 16): regret median %.1f%%, "
          "p95 %.1f%%, over %zu configurations; best gain of d* over d = 4: %.2fx\n",
          100 * sum.regret_median, 100 * sum.regret_p95, sum.degree.size(), sum.max_gain_vs_d4);
    }
    if (sum.class_mape >= 0) {
      std::string params;
      for (const auto& [cls, p] : sum.class_params) {
        params += fmt::format(" {}: alpha {:.1f} us, delta {:.1f} us, kappa {:.2f};", cls,
                              p[0] * 1e6, p[1] * 1e6, p[2]);
      }
      std::printf(
          "class model (fitted on the even configurations):%s T(d) MAPE %.1f%% on the "
          "held-out odd ones\n",
          params.c_str(), 100 * sum.class_mape);
    }
    if (sum.pipeline_mape >= 0) {
      std::string params;
      for (const auto& [cls, p] : sum.pipeline_params) {
        params += fmt::format(" {}: alpha {:.1f} us, delta {:.1f} us, kappa {:.2f};", cls,
                              p[0] * 1e6, p[1] * 1e6, p[2]);
      }
      std::printf(
          "pipeline model (profiled part GEMMs, fitted on the even configurations):%s T(d) MAPE "
          "%.1f%% on the held-out odd ones; its d* regret median %.1f%%, p95 %.1f%%\n",
          params.c_str(), 100 * sum.pipeline_mape, 100 * sum.pipeline_regret_median,
          100 * sum.pipeline_regret_p95);
    }
  } else {
    std::printf("checked %zu configurations (no timing)\n", b.configs.size());
  }
  if (sel != nullptr) {
    core::Table t({"held-out configuration", "pick", "predicted us", "measured us", "measured best",
                   "best us", "none us", "tolerance", "right"});
    for (const compass::SelectorRow& r : sel->rows) {
      if (!r.held_out) continue;
      t.AddRow({r.label, r.pick, core::Fixed(r.predicted_s * 1e6, 1),
                core::Fixed(r.pick_s * 1e6, 1), r.best, core::Fixed(r.best_s * 1e6, 1),
                core::Fixed(r.none_s * 1e6, 1), fmt::format("{:.1f}%", 100 * r.tolerance),
                r.right ? (r.strict ? "yes (best)" : "yes") : "no"});
    }
    std::printf(
        "selector (overheads fitted on the even configurations, picks on the odd ones from "
        "profiled GEMMs and modeled collectives):\n%s",
        t.Render().c_str());
    std::printf(
        "selector top-1 %.0f%% (%d of %d within max(2%%, 2x spread) of the measured best), "
        "strict %.0f%%, slower than none beyond tolerance: %d\n",
        100 * sel->top1(), sel->right, sel->held_out, 100 * sel->strict_top1(), sel->regressions);
    std::printf("  with the run-CV tolerance max(2%%, 2x the best's run CV): top-1 %.0f%%\n",
                100 * sel->top1_cv());
    std::string fam;
    for (const auto& [f, m] : sel->family_mape) fam += fmt::format(" {} {:.1f}%;", f, 100 * m);
    std::printf("strategy model on the held-out configurations: MAPE %.1f%% (%s )\n",
                100 * sel->mape, fam.c_str());
  }
  if (b.checked) {
    double worst = 0;
    for (const compass::OverlapConfigResult& c : b.configs)
      for (const compass::OverlapRun& r : c.runs) worst = std::max(worst, r.rel_error);
    std::printf(
        "check: every strategy equals the single-process GEMM within %.1e relative "
        "(tolerance 1e-5)\n",
        worst);
  }
}

Status BenchOnWorld(const CompassBenchArgs& a, comm::Communicator& world) {
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  ASSIGN_OR_RETURN(hw::Topology topology, hw::LoadTopology(a.topology));
  ASSIGN_OR_RETURN(compass::OverlapGrid grid, compass::LoadGrid(a.grid));
  compass::OverlapBenchConfig o;
  ASSIGN_OR_RETURN(o.shapes, compass::GridShapes(grid, world.size()));
  o.strategies = grid.strategies;
  o.degrees = grid.degrees;
  o.compute = a.compute == "modeled" ? runtime::ComputeMode::kModeled : runtime::ComputeMode::kReal;
  o.check = a.check;
  o.repeats = a.repeats;
  std::optional<double> fixed;
  if (a.time_scale > 0) fixed = a.time_scale;
  ASSIGN_OR_RETURN(runtime::TimeScale scale, compass::AgreeTimeScale(world, topology, fixed));
  RankZeroProgress progress(world, "overlap runs");
  o.progress = std::ref(progress);
  // One line per finished configuration on stderr (kept by a log when stderr is not a TTY).
  auto config_done = [](int i, int count, const compass::OverlapConfigResult& c) {
    std::string line;
    for (const compass::OverlapRun& r : c.runs) {
      if (r.timed && r.degree == 0) line += " " + r.strategy + " " + Ms(r.median_s);
    }
    std::fprintf(stderr, "\n[%d/%d] %s:%s ms\n", i + 1, count, c.shape.label.c_str(),
                 line.empty() ? " checked" : line.c_str());
  };
  ASSIGN_OR_RETURN(compass::OverlapBench b,
                   compass::RunOverlapBench(world, topology, scale, o, config_done));
  progress.Done();
  if (world.rank() != 0) return Status::Ok();
  const compass::OverlapSummary sum = compass::SummarizeOverlap(b);
  // The selector is scored where the grid measured its candidates (none, fused, decomp).
  auto sel =
      b.repeats > 0
          ? compass::EvaluateSelector(b)
          : core::StatusOr<compass::SelectorEvaluation>(core::InvalidArgument("no timed runs"));
  if (!a.json_path.empty()) {
    core::Json j = ToJson(b);
    j["summary"] = ToJson(sum);
    if (sel.ok()) j["selector"] = ToJson(*sel);
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  Print(b, sum, sel.ok() ? &*sel : nullptr);
  std::fflush(stdout);
  return Status::Ok();
}

Status RunBench(const CompassBenchArgs& a) {
  RETURN_IF_ERROR(
      NameFlags(compass::CheckGridJob(a.topology, a.grid, a.ranks, 1), {{"ranks", "--ranks"}}));
  return RunMpiJob(a.ranks, a.op_timeout_s,
                   [&](comm::Communicator& world) { return BenchOnWorld(a, world); });
}

}  // namespace

void AddCompassBench(CLI::App* compass, Action* action) {
  auto a = std::make_shared<CompassBenchArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = compass->add_subcommand(
      "bench",
      "Run every overlap strategy (none, fused single/double ring, direct, decomposition, TE "
      "defaults) on every TP operator of a grid over emulated links; check against one process");
  c->add_option("--ranks", a->ranks, "MPI ranks = TP degree = devices 0..N-1")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  AddTopologyOption(c, &a->topology, paths.get());
  c->add_option("--grid", a->grid, "quick (48 configurations) or a grid JSON file")
      ->capture_default_str();
  paths->RecordInput("--grid", &a->grid);
  c->add_option("--compute", a->compute,
                "real GEMMs, or modeled: each GEMM sleeps for its profiled time (for ranks "
                "that outnumber cores)")
      ->check(CLI::IsMember({"real", "modeled"}))
      ->capture_default_str();
  c->add_flag("--check", a->check,
              "first run every strategy with real GEMMs and compare every rank's output with "
              "the single-process GEMM (relative error <= 1e-5)");
  c->add_option("--repeats", a->repeats, "timed runs per strategy, interleaved (0: check only)")
      ->transform(Integer(0, 1000))
      ->capture_default_str();
  AddEmulatorOptions(c, &a->time_scale, &a->op_timeout_s);
  paths->Output(c, "--json", &a->json_path, "write the results and summary as JSON");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunBench(*a); }); });
}

}  // namespace tessera::cli
