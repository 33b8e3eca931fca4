#include "xema/planner/grid_search.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <memory>

#include "core/elapsed.h"
#include "core/stats.h"
#include "xema/serve/loadgen.h"
#include "xema/serve/server.h"

namespace tessera::xema {
namespace {

using Clock = std::chrono::steady_clock;

bool SameConfig(const Configuration& a, const Configuration& b) {
  return a.variant == b.variant && a.concurrency == b.concurrency;
}

core::Status ServeForReal(const ServingProfile& profile, const ServingPlannerOptions& o,
                          GridPoint* point) {
  ServerOptions so;
  so.budget_bytes = o.budget_bytes;
  so.devices = o.devices;
  so.queue_capacity = o.queue_capacity;
  so.serving_plan = std::make_shared<const ServingPlan>(
      MakeServingPlan(profile, o, point->config, ConfigurationScore{}));
  so.serving_plan_source = "grid point " + point->label;
  ASSIGN_OR_RETURN(std::unique_ptr<DiffusionServer> server, DiffusionServer::Start(so));
  LoadgenOptions lo = PlannedLoad(o);
  lo.url = server->url();
  for (const TemplateProfile& t : profile.templates) lo.reference_solo_s.push_back(t.isolated_s);
  auto report = RunLoadgen(lo);
  server->Stop();
  if (!report.ok()) return report.status().WithPrefix("grid point " + point->label);
  point->attainment = report->slo_attainment;
  point->p50_s = report->latency_p50_s;
  point->p99_s = report->latency_p99_s;
  point->planned = report->planned;
  point->completed = report->completed;
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<GridReport> RunGrid(const ServingProfile& profile, const ServingPlannerOptions& o,
                                   const Configuration& chosen, const GridOptions& g) {
  ASSIGN_OR_RETURN(const std::vector<PlannedArrival> arrivals, PlanArrivals(PlannedLoad(o)));
  GridReport r;
  const std::vector<Configuration> grid = EnumerateGrid(profile, o.max_concurrency);
  int feasible = 0;
  for (const Configuration& c : grid) feasible += Feasible(profile, c) ? 1 : 0;
  std::vector<double> e50, e99;
  for (const Configuration& c : grid) {
    GridPoint p;
    p.config = c;
    p.label = ConfigurationLabel(profile, c);
    p.feasible = Feasible(profile, c);
    ASSIGN_OR_RETURN(p.predicted, ScoreConfiguration(profile, o, arrivals, c));
    if (p.feasible && g.real) {
      if (g.progress) g.progress(r.served, feasible, p.label);
      const Clock::time_point t0 = Clock::now();
      RETURN_IF_ERROR(ServeForReal(profile, o, &p));
      p.wall_s = core::SecondsSince(t0);
      r.grid_s += p.wall_s;
      ++r.served;
      if (p.p50_s > 0) e50.push_back(std::abs(p.predicted.p50_s - p.p50_s) / p.p50_s);
      if (p.p99_s > 0) e99.push_back(std::abs(p.predicted.p99_s - p.p99_s) / p.p99_s);
    }
    if (SameConfig(c, chosen)) r.chosen = static_cast<int>(r.points.size());
    r.points.push_back(std::move(p));
  }
  if (g.progress && g.real) g.progress(r.served, feasible, "");
  r.p50_mape = core::Mean(e50);
  r.p99_mape = core::Mean(e99);
  // The best point: measured when served for real, else the simulation's.
  auto value = [&](const GridPoint& p) { return g.real ? p.attainment : p.predicted.attainment; };
  auto p50 = [&](const GridPoint& p) { return g.real ? p.p50_s : p.predicted.p50_s; };
  for (size_t i = 0; i < r.points.size(); ++i) {
    const GridPoint& p = r.points[i];
    if (!p.feasible) continue;
    if (r.best < 0 || value(p) > value(r.points[static_cast<size_t>(r.best)]) ||
        (value(p) == value(r.points[static_cast<size_t>(r.best)]) &&
         p50(p) < p50(r.points[static_cast<size_t>(r.best)]))) {
      r.best = static_cast<int>(i);
    }
  }
  if (r.best >= 0 && r.chosen >= 0) {
    r.regret_points = 100 * (value(r.points[static_cast<size_t>(r.best)]) -
                             value(r.points[static_cast<size_t>(r.chosen)]));
  }
  return r;
}

core::Json ToJson(const GridReport& r, const ServingProfile& profile) {
  core::Json points = core::Json::array();
  for (const GridPoint& p : r.points) {
    points.push_back({{"configuration", p.label},
                      {"variant", p.config.variant},
                      {"concurrency", p.config.concurrency},
                      {"feasible", p.feasible},
                      {"predicted",
                       {{"attainment", p.predicted.attainment},
                        {"p50_s", p.predicted.p50_s},
                        {"p99_s", p.predicted.p99_s}}},
                      {"measured",
                       {{"attainment", p.attainment},
                        {"p50_s", p.p50_s},
                        {"p99_s", p.p99_s},
                        {"planned", p.planned},
                        {"completed", p.completed},
                        {"wall_s", p.wall_s}}}});
  }
  core::Json templates = core::Json::array();
  for (const TemplateProfile& t : profile.templates) {
    core::Json variants = core::Json::array();
    for (const TemplateVariant& v : t.variants) {
      variants.push_back({{"labels", v.labels},
                          {"arena_bytes", v.arena_bytes},
                          {"solo_s", v.solo_s},
                          {"batch", v.batch},
                          {"batch_s", v.batch_s}});
    }
    templates.push_back(
        {{"template", t.label}, {"isolated_s", t.isolated_s}, {"variants", variants}});
  }
  return {{"format", "tessera.xema.grid/1"},
          {"label", "measured"},
          {"templates", templates},
          {"region_bytes", profile.region_bytes},
          {"pair_speedup", profile.pair_speedup},
          {"profile_s", profile.profile_s},
          {"points", points},
          {"best", r.best},
          {"chosen", r.chosen},
          {"grid_s", r.grid_s},
          {"served", r.served},
          {"p50_mape", r.p50_mape},
          {"p99_mape", r.p99_mape},
          {"regret_points", r.regret_points}};
}

}  // namespace tessera::xema
