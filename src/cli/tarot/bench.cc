// `tessera tarot bench`: the ablation benchmark (tarot/bench.h) over a seeded set (refscenes or
// fmnist) -- gIoU per tier for every system, the overall metrics with 95% intervals, calls and
// time per query, the MSR boundary-error split, the reasoner error sweep, and the bars
// (tarot/bench_report.h). Parses, calls tarot::RunBench, renders.
#include "tarot/bench.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/plot.h"
#include "cli/tarot/tarot_args.h"
#include "core/json_util.h"
#include "core/table.h"
#include "tarot/bench_report.h"

namespace tessera::cli {
namespace {

struct BenchArgs {
  std::string set = "refscenes";
  int n = 20;
  uint64_t seed = 1;
  std::string systems = "all";
  TarotBackendArgs backends;
  int resamples = 1000;
  bool sweep = false;
  std::string sweep_skill = "all";
  bool no_boundary = false;
  bool quiet = false;
  std::string json_path;
  int msr_rounds = tarot::MsrOptions{}.rounds;
  double msr_area_fraction = tarot::MsrOptions{}.area_fraction;
  std::string msr_area_of = tarot::AreaOfName(tarot::MsrOptions{}.area_of);
  bool msr_no_compare = false;
  std::string plot_path;
};

std::string Pts(double fraction) { return core::Fixed(100 * fraction, 1); }
std::string PtsCi(const tarot::Interval& i) {
  return "[" + core::Fixed(100 * i.lo, 1) + ", " + core::Fixed(100 * i.hi, 1) + "]";
}

core::StatusOr<std::vector<tarot::System>> ParseSystems(const std::string& text) {
  if (text == "all") return tarot::AllSystems();
  std::vector<tarot::System> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string name =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    ASSIGN_OR_RETURN(tarot::System s, tarot::ParseSystem(name));
    out.push_back(s);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void PrintTiers(const tarot::BenchReport& r) {
  std::vector<std::string> header = {"system"};
  for (const auto& [tier, n] : r.samples_per_tier) header.push_back(tier);
  header.push_back("all");
  core::Table table(header);
  std::vector<std::string> counts = {"(samples)"};
  for (const auto& [tier, n] : r.samples_per_tier) counts.push_back(std::to_string(n));
  counts.push_back(std::to_string(r.samples));
  table.AddRow(counts);
  for (const tarot::SystemSummary& s : r.systems) {
    std::vector<std::string> row = {tarot::SystemName(s.system)};
    for (const auto& [tier, n] : r.samples_per_tier) row.push_back(Pts(s.by_tier.at(tier).giou));
    row.push_back(Pts(s.by_tier.at("all").giou));
    table.AddRow(row);
  }
  std::printf("gIoU per tier (points):\n%s", table.Render().c_str());
}

void PrintOverall(const tarot::BenchReport& r) {
  core::Table table({"system", "gIoU [95% CI]", "cIoU", "P@0.5", "P@0.7", "P@0.9", "seg calls",
                     "rsn calls", "feat calls", "ms/query", "errors"});
  for (const tarot::SystemSummary& s : r.systems) {
    const tarot::MetricSummary& m = s.by_tier.at("all");
    table.AddRow({tarot::SystemName(s.system), Pts(m.giou) + " " + PtsCi(m.giou_ci), Pts(m.ciou),
                  Pts(m.p50), Pts(m.p70), Pts(m.p90), core::Fixed(s.segmenter_calls, 1),
                  core::Fixed(s.reasoner_calls, 1), core::Fixed(s.feature_calls, 1),
                  core::Fixed(s.ms_median, 2), std::to_string(s.errors)});
  }
  std::printf("all tiers (points; calls are means per query; ms/query is the median):\n%s",
              table.Render().c_str());
  for (const tarot::SystemSummary& s : r.systems) {
    if (s.errors > 0) {
      std::printf("  %s: %d queries failed, first: %s\n", tarot::SystemName(s.system), s.errors,
                  s.first_error.c_str());
    }
  }
}

void PrintBoundary(const tarot::BoundarySplit& b) {
  std::string knobs;
  for (const auto& [k, v] : b.segmenter_options) knobs += " " + k + "=" + v;
  core::Table table({"targets", "with errors", "eri gIoU", "with MSR gIoU", "MSR gain [95% CI]",
                     "clean", "harmful (IoU -0.05)"});
  auto row = [&](const char* name, const tarot::BoundaryGroup& g) {
    table.AddRow(
        {name, std::to_string(g.with_errors), Pts(g.eri_giou), Pts(g.full_giou),
         Pts(g.gain) + " " + PtsCi(g.gain_ci), std::to_string(g.clean),
         std::to_string(g.harmful) + " (" + core::Fixed(100 * g.harmful_fraction, 1) + "%)"});
  };
  row("all", b.all);
  row("single object", b.single);
  row("group", b.group);
  for (const auto& [system, g] : b.ablations) {
    row((std::string(tarot::SystemName(system)) + " (all)").c_str(), g);
  }
  std::printf(
      "MSR on boundary errors (segmenter%s; a sample has errors when they changed ERI's "
      "mask):\n%s",
      knobs.c_str(), table.Render().c_str());
}

void PrintSweep(const tarot::BenchReport& r) {
  const tarot::ReasonerSweep& s = *r.sweep;
  core::Table table({"reasoner error", "full gIoU", "naive-coupling gIoU"});
  for (const tarot::SweepPoint& p : s.points) {
    table.AddRow({core::Fixed(100 * p.rate, 0) + "%", Pts(p.full_giou) + " " + PtsCi(p.full_ci),
                  Pts(p.coupling_giou) + " " + PtsCi(p.coupling_ci)});
  }
  std::printf("reasoner error sweep (noisy reasoner, %s):\n%s",
              r.options.sweep_skill == "all" ? "every skill at the rate"
                                             : (r.options.sweep_skill + " errors only").c_str(),
              table.Render().c_str());
}

void PrintTargets(const tarot::BenchReport& r) {
  core::Table table({"bar", "claim", "needed", "measured", "met"});
  for (const tarot::TargetCheck& t : tarot::CheckTargets(r)) {
    std::string value = "-";
    if (t.applicable) {
      value = t.name == "reasoner-error"
                  ? (std::isfinite(t.value) ? core::Fixed(t.value, 2) + "x" : std::string("inf"))
              : t.name == "msr-harm" ? core::Fixed(t.value, 1) + "%"
                                     : core::Fixed(t.value, 1) + " points";
    }
    table.AddRow({t.name, t.claim, t.bar, value,
                  t.applicable ? (t.met ? "yes" : "NO") : "n/a (" + t.note + ")"});
  }
  std::printf("the issue's bars (stated for the synthetic segmenter and the rule reasoner):\n%s",
              table.Render().c_str());
}

core::Status RunBenchCommand(const BenchArgs& a) {
  tarot::BenchOptions o;
  o.set = a.set;
  o.n = a.n;
  o.seed = a.seed;
  ASSIGN_OR_RETURN(o.systems, NameFlags(ParseSystems(a.systems), {{"tarot.system", "--systems"}}));
  ASSIGN_OR_RETURN(o.backends, ToBackendChoice(a.backends));
  o.metrics.bootstrap_resamples = a.resamples;
  o.metrics.seed = a.seed;
  o.sweep_reasoner_error = a.sweep;
  o.sweep_skill = a.sweep_skill;
  o.boundary_split = !a.no_boundary;
  o.progress = !a.quiet;
  o.pipeline.msr.rounds = a.msr_rounds;
  o.pipeline.msr.area_fraction = a.msr_area_fraction;
  ASSIGN_OR_RETURN(o.pipeline.msr.area_of, TarotFlags(tarot::ParseAreaOf(a.msr_area_of)));
  o.pipeline.msr.accept_by_compare = !a.msr_no_compare;
  ASSIGN_OR_RETURN(tarot::BenchReport r, TarotFlags(tarot::RunBench(o)));
  std::printf(
      "tarot bench: %s, %d scenes (seed %llu), %d expressions; segmenter %s, reasoner "
      "%s, features %s\n",
      o.set.c_str(), r.scenes, static_cast<unsigned long long>(o.seed), r.samples,
      o.backends.segmenter.c_str(), o.backends.reasoner.c_str(), o.backends.features.c_str());
  PrintTiers(r);
  PrintOverall(r);
  if (r.boundary.has_value()) PrintBoundary(*r.boundary);
  if (r.sweep.has_value()) PrintSweep(r);
  PrintTargets(r);
  std::printf(
      "(measured on this machine, one thread, %.1f s in all; these figures test the "
      "algorithm on generated scenes, not the paper's RefCOCO numbers)\n",
      r.wall_s);
  if (!a.json_path.empty()) {
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, tarot::BenchReportToJson(r)));
  }
  if (!a.plot_path.empty()) {
    RETURN_IF_ERROR(RenderPlot("plot_tarot_bench.py", tarot::BenchPlotJson(r), a.plot_path));
    std::printf("wrote %s\n", a.plot_path.c_str());
  }
  return core::Status::Ok();
}

}  // namespace

void AddTarotBench(CLI::App* tarot, Action* action) {
  auto a = std::make_shared<BenchArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = tarot->add_subcommand(
      "bench", "Benchmark the systems per tier on generated scenes (gIoU, cIoU, P@t, calls, time)");
  c->add_option("--set", a->set,
                "the benchmark set: refscenes, or fmnist (Fashion-MNIST items; needs the Debian "
                "package dataset-fashion-mnist)")
      ->capture_default_str();
  c->add_option("--n", a->n, "number of scenes (default 20)")->transform(Integer(1, 100000));
  c->add_option("--seed", a->seed, "seed of the scene set (and the error draws)")
      ->transform(Seed());
  c->add_option("--systems", a->systems,
                "all, or a comma list of naive, naive-coupling, text-only, box-only, "
                "no-rephrase, no-vote, eri, full, msr-flat-features, msr-yes-judge")
      ->capture_default_str();
  AddTarotBackendOptions(c, &a->backends);
  c->add_option("--resamples", a->resamples, "bootstrap resamples for the 95% intervals")
      ->transform(Integer(0, 100000));
  c->add_flag("--sweep-reasoner-error", a->sweep,
              "also sweep the noisy reasoner's error rate 0-40% (full vs naive-coupling)");
  c->add_option("--sweep-skill", a->sweep_skill,
                "the errors swept: all, or one of attribute, relation, ordinal, knowledge, "
                "hallucination, box, judge")
      ->capture_default_str();
  c->add_flag("--no-boundary", a->no_boundary,
              "skip the MSR boundary-error split (synthetic segmenter only)");
  c->add_option("--msr-rounds", a->msr_rounds, "MSR refine rounds")
      ->transform(Integer(0, 100))
      ->capture_default_str();
  c->add_option("--msr-area-fraction", a->msr_area_fraction,
                "MSR keeps the mask when both disagreement regions are at most this fraction "
                "of --msr-area-of")
      ->transform(Number(0, 1))
      ->capture_default_str();
  c->add_option("--msr-area-of", a->msr_area_of,
                "what --msr-area-fraction is a fraction of: image or mask")
      ->capture_default_str();
  c->add_flag("--msr-no-compare", a->msr_no_compare,
              "return MSR's refined mask without asking the reasoner to compare it with ERI's");
  c->add_flag("--quiet", a->quiet, "no progress bar on stderr");
  paths->Output(c, "--json", &a->json_path, "write the full report as JSON");
  paths->Output(c, "--plot", &a->plot_path,
                "draw gIoU per system and tier (and the sweep) as a PNG (python3-matplotlib)");
  c->callback(
      [action, a, paths] { *action = Checked(paths, [a] { return RunBenchCommand(*a); }); });
}

}  // namespace tessera::cli
