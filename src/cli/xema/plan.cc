// `tessera xema plan`: the offline planner of Xema part 3 (xema/planner/serving_planner.h):
// profiles the mix's templates on this host, searches SP degree (devices >= 2), concurrency and
// memory control per template under the budget and SLO with the serving simulation, and writes
// the plan table `xema serve --plan` uses. `--grid sim` also simulates every configuration of
// the grid; `--grid real` serves every feasible one for real (xema/planner/grid_search.h) and
// reports the planner against it: time ratio, regret, the simulation's latency MAPE.
// `--device NAME` (a modeled GPU) plans the public models at paper scale instead, modeled
// (xema/planner/modeled_profile.h): SP degree, memory control, concurrency, encoder placement.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "xema/planner/grid_search.h"
#include "xema/planner/modeled_profile.h"
#include "xema/planner/serving_planner.h"
#include "xema/serve/serve_device.h"

namespace tessera::cli {
namespace {

struct XemaPlanArgs {
  std::string mix;
  std::string device = xema::kLocalDeviceKind;
  int64_t budget_bytes = 0;  // 0: the modeled device's memory
  int64_t devices = 1;
  double rate_rps = 1;
  double slo_scale = 5;
  double duration_s = 20;
  uint64_t seed = 1;
  int64_t queue = 64;
  int64_t max_concurrency = 3;
  int64_t max_sp = 64;
  int64_t max_batch = xema::kMaxRequestBatch;
  int64_t timing_runs = 3;
  double overhead_s = -1;
  std::string grid;  // "", "sim" or "real"
  std::string out_path;
  std::string json_path;
};

std::string PlanPercent(double f) { return core::Fixed(100 * f, 1) + "%"; }

void PrintXemaProfile(const xema::ServingProfile& p) {
  int64_t weights = 0;
  for (const auto& [name, bytes] : p.weight_bytes) weights += bytes;
  std::string speedup;
  for (size_t a = 0; a < p.pair_speedup.size(); ++a) {
    for (size_t b = a; b < p.pair_speedup.size(); ++b) {
      speedup += fmt::format("{}t{}+t{} {}", speedup.empty() ? "" : ", ", a, b,
                             core::Fixed(p.pair_speedup[a][b], 3));
    }
  }
  std::printf(
      "profile (measured on cpu %d): weights %s, region %s per device; two requests sharing the "
      "core, aggregate speed-up: %s; server overhead %.4f s per request; %.1f s (templates "
      "%.1f s, pairs %.1f s, overhead probe %.1f s)\n",
      p.cpu, core::FormatBytes(weights).c_str(), core::FormatBytes(p.region_bytes).c_str(),
      speedup.c_str(), p.overhead_s, p.profile_s, p.templates_s, p.pairs_s, p.overhead_probe_s);
  core::Table t({"template", "variant", "mitigations", "arena", "solo s", "full batch s"});
  for (const xema::TemplateProfile& tp : p.templates) {
    for (size_t v = 0; v < tp.variants.size(); ++v) {
      const xema::TemplateVariant& x = tp.variants[v];
      std::string m;
      for (const std::string& l : x.labels) m += (m.empty() ? "" : ",") + l;
      t.AddRow({v == 0 ? tp.label : "", std::to_string(v), m.empty() ? "off" : m,
                core::FormatBytes(x.arena_bytes), core::Fixed(x.solo_s, 4),
                x.batch > 1 ? core::Fixed(x.batch_s.back(), 4) : "-"});
    }
  }
  std::printf("%s", t.Render().c_str());
}

void PrintXemaPlan(const xema::ServingPlan& plan, const xema::ServingPlannerResult& r,
                   bool modeled) {
  core::Table t({"template", "SP", "replicas", "concurrency", "batch", "allocator", "arena",
                 "mitigations", "solo s", "p50 s", "p99 s", "SLO s", "attainment"});
  for (const xema::ServingPlanEntry& e : plan.entries) {
    std::string m;
    for (const std::string& l : xema::MitigationLabels(e.request)) m += (m.empty() ? "" : ",") + l;
    t.AddRow({e.key, std::to_string(e.sp_degree), std::to_string(e.replicas),
              std::to_string(e.concurrency), std::to_string(e.batch), e.allocator,
              core::FormatBytes(e.arena_bytes), m.empty() ? "off" : m, core::Fixed(e.solo_s, 3),
              core::Fixed(e.p50_s, 3), core::Fixed(e.p99_s, 3), core::Fixed(e.slo_s, 3),
              PlanPercent(e.attainment)});
  }
  std::printf("%s", t.Render().c_str());
  for (const std::string& u : r.unplanned) {
    std::printf("not planned (no configuration fits; served by the fallback): %s\n", u.c_str());
  }
  std::printf(
      "planner: %lld candidates, %lld infeasible (pruned exactly), %lld dominated, %lld "
      "configurations simulated; predicted attainment %s, p50 %.3f s, p99 %.3f s; search %.3f s "
      "(%s)\n",
      static_cast<long long>(r.candidates), static_cast<long long>(r.infeasible),
      static_cast<long long>(r.dominated), static_cast<long long>(r.simulated),
      PlanPercent(r.score.attainment).c_str(), r.score.p50_s, r.score.p99_s, r.search_s,
      modeled ? "modeled: analytic traces at the device's achieved rate, all-to-alls at its peer "
                "link's speed"
              : "measured arena bytes and solo times, modeled latencies");
}

void PrintXemaGrid(const xema::GridReport& g, bool real, double planner_s) {
  std::vector<std::string> header = {"#",        "configuration", "fits",
                                     "sim att.", "sim p50",       "sim p99"};
  if (real) {
    for (const char* h : {"att.", "p50", "p99", "s"}) header.push_back(h);
  }
  core::Table t(header);
  for (size_t i = 0; i < g.points.size(); ++i) {
    const xema::GridPoint& p = g.points[i];
    std::string mark = static_cast<int>(i) == g.chosen ? " <- planner" : "";
    if (static_cast<int>(i) == g.best) mark += " <- best";
    std::vector<std::string> row = {std::to_string(i), p.label + mark, p.feasible ? "yes" : "no"};
    if (!p.feasible) {
      row.resize(header.size(), "-");
      t.AddRow(row);
      continue;
    }
    row.push_back(PlanPercent(p.predicted.attainment));
    row.push_back(core::Fixed(p.predicted.p50_s, 3));
    row.push_back(core::Fixed(p.predicted.p99_s, 3));
    if (real) {
      row.push_back(PlanPercent(p.attainment));
      row.push_back(core::Fixed(p.p50_s, 3));
      row.push_back(core::Fixed(p.p99_s, 3));
      row.push_back(core::Fixed(p.wall_s, 1));
    }
    t.AddRow(row);
  }
  std::printf("%s", t.Render().c_str());
  if (real) {
    std::printf(
        "grid: %d configurations served in %.1f s; planner %.1f s: %.1fx faster; planner's "
        "choice %s of attainment below the grid's best (regret); simulated vs measured latency "
        "MAPE p50 %.1f%%, p99 %.1f%% (measured on this machine)\n",
        g.served, g.grid_s, planner_s, planner_s > 0 ? g.grid_s / planner_s : 0,
        (core::Fixed(g.regret_points, 1) + " points").c_str(), 100 * g.p50_mape, 100 * g.p99_mape);
  }
}

// The paper-scale planner on a modeled device: no profiling runs, no grid.
core::Status RunModeledPlan(const XemaPlanArgs& a, xema::ServingPlannerOptions o) {
  ASSIGN_OR_RETURN(const xema::ModeledDevice device, xema::FindModeledDevice(a.device));
  if (!a.grid.empty()) {
    return core::InvalidArgument(fmt::format(
        "grid: got '{}', a modeled device ({}) has no grid to serve; plan on --device cpu", a.grid,
        a.device));
  }
  if (o.budget_bytes == 0) o.budget_bytes = device.memory_bytes;
  if (o.budget_bytes > device.memory_bytes) {
    return core::InvalidArgument(fmt::format("budget: got {}, the {} has {}",
                                             core::FormatBytes(o.budget_bytes), device.name,
                                             core::FormatBytes(device.memory_bytes)));
  }
  ASSIGN_OR_RETURN(o.mix, xema::ReadMix(a.mix, xema::MixModels::kAnalytic));
  ASSIGN_OR_RETURN(const xema::ServingPlannerResult r, xema::PlanModeledServing(o, device));
  const core::Json& on_host = r.plan.planner["encoders_on_host"];
  std::printf(
      "modeled device %s (datasheet figures): %.0f GB (%s) per device, %d devices, %.0f TFLOP/s "
      "bf16 achieved, peer link %.0f GB/s, host link %.0f GB/s; text encoders kept in host "
      "memory: %s\n",
      device.name.c_str(), static_cast<double>(o.budget_bytes) / 1e9,
      core::FormatBytes(o.budget_bytes).c_str(), o.devices, device.flops_per_s / 1e12,
      device.link_bytes_per_s / 1e9, device.host_bytes_per_s / 1e9,
      on_host.empty() ? "none" : on_host.dump().c_str());
  PrintXemaPlan(r.plan, r, /*modeled=*/true);
  RETURN_IF_ERROR(core::WriteJsonFile(a.out_path, xema::ToJson(r.plan)));
  std::printf("wrote %s (modeled; planner %.1f s)\n", a.out_path.c_str(), r.search_s);
  return core::Status::Ok();
}

core::Status RunXemaPlan(const XemaPlanArgs& a) {
  xema::ServingPlannerOptions o;
  o.budget_bytes = a.budget_bytes;
  o.devices = static_cast<int>(a.devices);
  o.rate_rps = a.rate_rps;
  o.slo_scale = a.slo_scale;
  o.duration_s = a.duration_s;
  o.seed = a.seed;
  o.queue_capacity = static_cast<int>(a.queue);
  o.max_concurrency = static_cast<int>(a.max_concurrency);
  o.max_sp_degree = static_cast<int>(a.max_sp);
  o.max_batch = static_cast<int>(a.max_batch);
  o.timing_runs = static_cast<int>(a.timing_runs);
  o.overhead_s = a.overhead_s;
  std::unique_ptr<core::ProgressBar> bar;
  std::string stage;
  o.progress = [&](const std::string& s, int done, int total) {
    if (s != stage) {
      if (bar) bar->Done();
      bar = std::make_unique<core::ProgressBar>(s, total);
      stage = s;
    }
    bar->Update(done);
  };
  if (a.device != xema::kLocalDeviceKind) return RunModeledPlan(a, o);
  if (o.budget_bytes == 0) {
    return core::InvalidArgument("budget: required for --device cpu (e.g. --budget 256MiB)");
  }
  ASSIGN_OR_RETURN(o.mix, xema::ReadMix(a.mix));
  ASSIGN_OR_RETURN(const xema::ServingProfile profile, xema::ProfileServing(o));
  if (bar) bar->Done();
  bar.reset();
  ASSIGN_OR_RETURN(const xema::ServingPlannerResult r, xema::PlanServing(profile, o));
  PrintXemaProfile(profile);
  PrintXemaPlan(r.plan, r, /*modeled=*/false);
  const double planner_s = profile.profile_s + r.search_s;
  if (!a.grid.empty()) {
    xema::GridOptions g;
    g.real = a.grid == "real";
    g.progress = [&](int done, int total, const std::string&) {
      if (!bar) bar = std::make_unique<core::ProgressBar>("grid", total);
      bar->Update(done);
    };
    ASSIGN_OR_RETURN(const xema::GridReport grid, xema::RunGrid(profile, o, r.chosen, g));
    if (bar) bar->Done();
    PrintXemaGrid(grid, g.real, planner_s);
    if (!a.json_path.empty()) {
      core::Json j = xema::ToJson(grid, profile);
      j["planner_s"] = planner_s;
      j["plan"] = xema::ToJson(r.plan);
      RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
    }
  }
  RETURN_IF_ERROR(core::WriteJsonFile(a.out_path, xema::ToJson(r.plan)));
  std::printf("wrote %s (planner %.1f s: profile %.1f s, search %.3f s)\n", a.out_path.c_str(),
              planner_s, profile.profile_s, r.search_s);
  return core::Status::Ok();
}

}  // namespace

void AddXemaPlan(CLI::App* xema, Action* action) {
  auto a = std::make_shared<XemaPlanArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand(
      "plan", "Plan concurrency and memory control per template under a budget and an SLO");
  c->add_option("--mix", a->mix, "templates: a JSON file or inline (as xema loadgen)")->required();
  paths->RecordInput("--mix", &a->mix);
  c->add_option("--device", a->device,
                "cpu (this host's cores, measured) or a modeled GPU: rtx4090-24g, l40s-48g, "
                "h100-80g, h200-141g")
      ->capture_default_str();
  c->add_option("--budget", a->budget_bytes,
                "device memory budget per device, e.g. 256MiB (required on cpu; default: the "
                "modeled device's memory)")
      ->transform(ByteSize(1, core::kMaxByteSize));
  c->add_option("--devices", a->devices, "serving devices (one core each)")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--rate", a->rate_rps, "arrival rate per second")
      ->check(PositiveNumber(10000))
      ->capture_default_str();
  c->add_option("--slo-scale", a->slo_scale, "SLO = scale x isolated latency")
      ->check(PositiveNumber(1e6))
      ->capture_default_str();
  c->add_option("--duration", a->duration_s, "seconds of Poisson arrivals scored (and served)")
      ->check(PositiveNumber(86400))
      ->capture_default_str();
  c->add_option("--seed", a->seed, "arrival and template seed")
      ->check(Seed())
      ->capture_default_str();
  c->add_option("--queue", a->queue, "requests that may wait for a device")
      ->transform(Integer(1, 100000))
      ->capture_default_str();
  c->add_option("--max-concurrency", a->max_concurrency,
                "most requests of one template in flight on a device")
      ->transform(Integer(1, xema::kMaxPlanConcurrency))
      ->capture_default_str();
  c->add_option("--max-sp", a->max_sp,
                "the largest SP degree tried (powers of two dividing --devices; cpu: one core "
                "per member)")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--max-batch", a->max_batch,
                "the most requests of a template one run takes together (one DiT pass)")
      ->transform(Integer(1, xema::kMaxRequestBatch))
      ->capture_default_str();
  c->add_option("--timing-runs", a->timing_runs, "timed runs per variant (median)")
      ->transform(Integer(1, 100))
      ->capture_default_str();
  c->add_option("--overhead", a->overhead_s,
                "seconds the server adds per request in the simulation (-1: measured)")
      ->check(Number(-1, 1e3))
      ->capture_default_str();
  c->add_option("--grid", a->grid,
                "also the grid: sim (simulate every configuration) or real (serve every one)")
      ->check(CLI::IsMember({"sim", "real"}));
  paths->Output(c, "--out", &a->out_path, "write the plan table here (for xema serve --plan)");
  c->get_option("--out")->required();
  paths->Output(c, "--json", &a->json_path, "with --grid: write every grid point as JSON here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunXemaPlan(*a); }); });
}

}  // namespace tessera::cli
