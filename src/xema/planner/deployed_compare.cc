#include "xema/planner/deployed_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>

#include "core/byte_size.h"
#include "xema/analytic_model.h"
#include "xema/analytic_trace.h"
#include "xema/planner/modeled_profile.h"

namespace tessera::xema {
namespace {

// Requests within their SLO beat by this many points or fewer still count as "at least".
constexpr double kWithinPoints = 0.02;
constexpr size_t kFirstDeployed = 2;  // rows: xema, xema+shed, then the deployed ones

int64_t ArrivalsOf(const std::vector<PlannedArrival>& arrivals, int t) {
  return std::count_if(arrivals.begin(), arrivals.end(),
                       [t](const PlannedArrival& a) { return a.template_index == t; });
}

core::StatusOr<DeployedRow> ScoreDeployed(const DeployedConfig& c, const ServingPlannerOptions& o,
                                          const ModeledDevice& device,
                                          const std::vector<PlannedArrival>& arrivals) {
  DeployedRow row;
  row.policy = DeployedConfigName(c);
  row.arrivals = static_cast<int64_t>(arrivals.size());
  ASSIGN_OR_RETURN(const DeployedProfile dp, DeployedServingProfile(c, o, device));
  row.templates = dp.templates;
  bool any = false;
  for (size_t t = 0; t < dp.templates.size(); ++t) {
    if (dp.templates[t].fits) {
      any = true;
    } else {
      row.out_of_memory += ArrivalsOf(arrivals, static_cast<int>(t));
    }
  }
  if (!any) {
    row.infeasible = true;
    int64_t least = std::numeric_limits<int64_t>::max();
    for (const DeployedTemplate& d : row.templates) least = std::min(least, d.device_bytes);
    row.why = fmt::format("its smallest template needs {} on one GPU, the device has {}",
                          core::FormatBytes(least), core::FormatBytes(device.memory_bytes));
    return row;
  }
  ASSIGN_OR_RETURN(const ConfigurationScore s,
                   ScoreConfiguration(dp.profile, o, arrivals, dp.configuration));
  row.attainment = s.attainment;
  row.p50_s = s.p50_s;
  row.p99_s = s.p99_s;
  return row;
}

core::StatusOr<DeployedRow> ScoreXema(ServingPlannerOptions o, bool may_shed,
                                      const ModeledDevice& device,
                                      const std::vector<PlannedArrival>& arrivals) {
  DeployedRow row;
  row.policy = may_shed ? "xema+shed" : "xema";
  row.arrivals = static_cast<int64_t>(arrivals.size());
  o.may_shed = may_shed;
  // The options are valid (checked by the caller): an error here means nothing fits.
  auto r = PlanModeledServing(o, device);
  if (!r.ok()) {
    row.infeasible = true;
    row.why = r.status().message();
    return row;
  }
  row.attainment = r->score.attainment;
  row.p50_s = r->score.p50_s;
  row.p99_s = r->score.p99_s;
  for (size_t t = 0; t < o.mix.size(); ++t) {
    if (r->chosen.variant[t] < 0) row.out_of_memory += ArrivalsOf(arrivals, static_cast<int>(t));
  }
  for (const std::string& label : r->shed) {
    if (!row.configuration.empty()) row.configuration += "; ";
    row.configuration += label + ": shed";
  }
  for (const ServingPlanEntry& e : r->plan.entries) {
    if (!row.configuration.empty()) row.configuration += "; ";
    std::vector<std::string> labels = MitigationLabels(e.request);
    std::erase_if(labels, [](const std::string& l) { return l.starts_with("offload"); });
    row.configuration +=
        fmt::format("{}x{}x{}: sp={} c={}{}{}", e.request.width, e.request.height, e.request.frames,
                    e.sp_degree, e.concurrency, e.batch > 1 ? fmt::format(" b={}", e.batch) : "",
                    labels.empty() ? "" : fmt::format(" {}", fmt::join(labels, ",")));
  }
  if (!r->plan.planner["encoders_on_host"].empty()) row.configuration += "; encoder on host";
  return row;
}

}  // namespace

core::StatusOr<DeployedProfile> DeployedServingProfile(const DeployedConfig& c,
                                                       const ServingPlannerOptions& o,
                                                       const ModeledDevice& device) {
  DeployedProfile dp;
  dp.profile.region_bytes = device.memory_bytes;
  for (size_t t = 0; t < o.mix.size(); ++t) {
    const DiffusionRequest& r = o.mix[t].request;
    ASSIGN_OR_RETURN(const DeployedTemplate d, ModelDeployedTemplate(c, r, device));
    dp.templates.push_back(d);
    TemplateProfile tp;
    tp.label = o.mix[t].label;
    tp.request = r;
    ASSIGN_OR_RETURN(tp.isolated_s, ModeledIsolatedSeconds(r, device));
    TemplateVariant v;
    v.request = r;
    // One pipeline per GPU (or SP group) runs one request at a time: a run takes the device.
    v.arena_bytes = device.memory_bytes;
    v.solo_s = d.solo_s;
    v.batch_s = {d.solo_s};
    v.sp_degree = d.sp_degree;
    v.labels = {DeployedConfigName(c)};
    tp.variants.push_back(std::move(v));
    dp.profile.templates.push_back(std::move(tp));
    dp.configuration.variant.push_back(d.fits ? 0 : -1);
    dp.configuration.concurrency.push_back(1);
  }
  return dp;
}

core::StatusOr<std::vector<DeployedRow>> CompareWithDeployed(
    const ServingPlannerOptions& o, const ModeledDevice& device,
    const std::vector<DeployedConfig>& configs) {
  RETURN_IF_ERROR(ValidatePlannerOptions(o));
  ASSIGN_OR_RETURN(const std::vector<PlannedArrival> arrivals, PlanArrivals(PlannedLoad(o)));
  std::vector<DeployedRow> rows;
  for (const bool shed : {false, true}) {
    ASSIGN_OR_RETURN(DeployedRow x, ScoreXema(o, shed, device, arrivals));
    rows.push_back(std::move(x));
  }
  for (const DeployedConfig& c : configs) {
    ASSIGN_OR_RETURN(DeployedRow r, ScoreDeployed(c, o, device, arrivals));
    rows.push_back(std::move(r));
  }
  return rows;
}

core::StatusOr<std::vector<LoadTemplate>> PaperMix(const std::string& model) {
  const char* json = nullptr;
  if (model == "flux2-dev") {
    json = R"([{"model": "flux2-dev", "size": "512x512", "steps": 28, "weight": 2},
               {"model": "flux2-dev", "size": "1024x1024", "steps": 28, "weight": 3},
               {"model": "flux2-dev", "size": "2048x2048", "steps": 28, "weight": 1}])";
  } else if (model == "cogvideox-5b") {
    json = R"([{"model": "cogvideox-5b", "size": "720x480", "frames": 25, "steps": 50, "weight": 1},
               {"model": "cogvideox-5b", "size": "720x480", "frames": 49, "steps": 50, "weight": 2},
               {"model": "cogvideox-5b", "size": "1360x768", "frames": 49, "steps": 50, "weight": 1}])";
  } else if (model == "ltx-2") {
    json = R"([{"model": "ltx-2", "size": "768x512", "frames": 49, "steps": 40, "weight": 2},
               {"model": "ltx-2", "size": "768x512", "frames": 121, "steps": 40, "weight": 2},
               {"model": "ltx-2", "size": "1216x704", "frames": 121, "steps": 40, "weight": 1}])";
  } else {
    return core::InvalidArgument(fmt::format("model: got '{}', must be one of {}", model,
                                             fmt::join(AnalyticModelNames(), ", ")));
  }
  return MixFromJson(core::Json::parse(json), "the " + model + " paper mix", MixModels::kAnalytic);
}

core::StatusOr<double> MeanIsolatedSeconds(const std::vector<LoadTemplate>& mix,
                                           const ModeledDevice& device) {
  double sum = 0, weights = 0;
  for (const LoadTemplate& t : mix) {
    ASSIGN_OR_RETURN(const double s, ModeledIsolatedSeconds(t.request, device));
    sum += t.weight * s;
    weights += t.weight;
  }
  if (!(weights > 0)) return core::InvalidArgument("mix: got no templates");
  return sum / weights;
}

core::StatusOr<DeployedSweepReport> RunDeployedSweep(const DeployedSweepOptions& so) {
  const std::vector<std::string> devices = so.devices.empty() ? ModeledDeviceNames() : so.devices;
  const std::vector<std::string> models = so.models.empty() ? AnalyticModelNames() : so.models;
  if (so.gpus.empty()) return core::InvalidArgument("gpus: got an empty list");
  if (so.loads.empty()) return core::InvalidArgument("loads: got an empty list");
  if (!(so.offload_host_bytes_per_s >= 0) || !std::isfinite(so.offload_host_bytes_per_s)) {
    return core::InvalidArgument(
        fmt::format("offload_host_bytes_per_s: got {}, must be >= 0", so.offload_host_bytes_per_s));
  }
  if (!(so.requests >= 1) || !std::isfinite(so.requests))
    return core::InvalidArgument(fmt::format("requests: got {}, must be >= 1", so.requests));
  for (double l : so.loads) {
    if (!(l > 0) || !std::isfinite(l))
      return core::InvalidArgument(fmt::format("loads: got {}, must be > 0", l));
  }
  // Every name checked before the first point is planned.
  std::vector<ModeledDevice> devs;
  for (const std::string& d : devices) {
    ASSIGN_OR_RETURN(ModeledDevice m, FindModeledDevice(d));
    devs.push_back(m);
  }
  std::vector<std::vector<LoadTemplate>> mixes;
  for (const std::string& m : models) {
    ASSIGN_OR_RETURN(std::vector<LoadTemplate> mix, PaperMix(m));
    mixes.push_back(std::move(mix));
  }
  std::vector<std::vector<DeployedConfig>> configs;  // per GPU count
  for (int g : so.gpus) {
    if (g < 1 || g > 64)
      return core::InvalidArgument(fmt::format("gpus: got {}, must be in [1, 64]", g));
    std::vector<DeployedConfig> cs;
    if (so.policies.empty()) cs = AllDeployedConfigs(g);
    for (const std::string& p : so.policies) {
      ASSIGN_OR_RETURN(DeployedConfig c, ParseDeployedConfig(p, g));
      cs.push_back(c);
    }
    for (DeployedConfig& c : cs) c.host_bytes_per_s = so.offload_host_bytes_per_s;
    configs.push_back(std::move(cs));
  }
  // Every point is independent: planned on worker threads, summarised in order.
  struct Spec {
    ServingPlannerOptions options;
    const ModeledDevice* device = nullptr;
    const std::vector<DeployedConfig>* configs = nullptr;
  };
  std::vector<DeployedPoint> points;
  std::vector<Spec> specs;
  for (const ModeledDevice& dev : devs) {
    for (size_t gi = 0; gi < so.gpus.size(); ++gi) {
      for (size_t mi = 0; mi < models.size(); ++mi) {
        ASSIGN_OR_RETURN(const double mean_s, MeanIsolatedSeconds(mixes[mi], dev));
        for (double load : so.loads) {
          DeployedPoint pt;
          pt.device = dev.name;
          pt.gpus = so.gpus[gi];
          pt.model = models[mi];
          pt.load = load;
          pt.rate_rps = load * pt.gpus / mean_s;
          Spec sp;
          sp.options.mix = mixes[mi];
          sp.options.budget_bytes = dev.memory_bytes;
          sp.options.devices = pt.gpus;
          sp.options.rate_rps = pt.rate_rps;
          sp.options.slo_scale = so.slo_scale;
          sp.options.duration_s = so.requests / pt.rate_rps;
          sp.options.seed = so.seed;
          sp.options.max_batch = so.max_batch;
          sp.options.max_concurrency = so.max_concurrency;
          sp.options.overhead_s = 0;
          sp.device = &dev;
          sp.configs = &configs[gi];
          points.push_back(std::move(pt));
          specs.push_back(std::move(sp));
        }
      }
    }
  }
  std::vector<core::Status> errors(points.size());
  std::mutex mu;
  int done = 0;
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < points.size(); i = next++) {
      auto rows = CompareWithDeployed(specs[i].options, *specs[i].device, *specs[i].configs);
      if (!rows.ok()) {
        errors[i] = rows.status();
        continue;
      }
      points[i].rows = std::move(*rows);
      std::lock_guard<std::mutex> lock(mu);
      if (so.progress) {
        so.progress(++done, static_cast<int>(points.size()),
                    fmt::format("{} x{} {} {:.0f}%", points[i].device, points[i].gpus,
                                points[i].model, 100 * points[i].load));
      }
    }
  };
  const size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, points.size());
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  DeployedSweepReport report;
  for (size_t i = 0; i < points.size(); ++i) {
    RETURN_IF_ERROR(errors[i]);
    DeployedPoint& pt = points[i];
    double best = -1;
    for (size_t k = kFirstDeployed; k < pt.rows.size(); ++k) {
      if (pt.rows[k].infeasible || pt.rows[k].attainment <= best) continue;
      best = pt.rows[k].attainment;
      pt.best_deployed = pt.rows[k].policy;
    }
    best = std::max(best, 0.0);
    for (int shed = 0; shed < 2; ++shed) {
      const DeployedRow& x = pt.rows[static_cast<size_t>(shed)];
      const double xa = x.infeasible ? 0 : x.attainment;
      const double ratio = best > 0 ? xa / best
                                    : (xa > 0 ? std::numeric_limits<double>::infinity()
                                              : std::numeric_limits<double>::quiet_NaN());
      (shed ? pt.ratio_shed : pt.ratio) = ratio;
      DeployedSweepReport::Summary& sum = shed ? report.shed : report.serve_all;
      if (x.infeasible) ++sum.xema_infeasible;
      if (!x.infeasible && xa >= best - kWithinPoints) ++sum.xema_at_least_best;
      if (std::isinf(ratio)) ++sum.infinite;
      if (std::isfinite(ratio) && ratio > sum.ratio_max) {
        sum.ratio_max = ratio;
        sum.ratio_max_at =
            fmt::format("{} x{}, {}, load {:.0f}%", pt.device, pt.gpus, pt.model, 100 * pt.load);
      }
    }
    report.points.push_back(std::move(pt));
  }
  return report;
}

core::Json ToJson(const DeployedSweepReport& r) {
  core::Json points = core::Json::array();
  for (const DeployedPoint& p : r.points) {
    core::Json rows = core::Json::array();
    for (const DeployedRow& x : p.rows) {
      core::Json row = {{"policy", x.policy},
                        {"infeasible", x.infeasible},
                        {"attainment", x.attainment},
                        {"p50_s", x.p50_s},
                        {"p99_s", x.p99_s},
                        {"arrivals", x.arrivals},
                        {"out_of_memory", x.out_of_memory}};
      if (x.infeasible) row["why"] = x.why;
      if (!x.configuration.empty()) row["configuration"] = x.configuration;
      core::Json ts = core::Json::array();
      for (const DeployedTemplate& t : x.templates) {
        ts.push_back({{"fits", t.fits},
                      {"device_bytes", t.device_bytes},
                      {"live_peak_bytes", t.live_peak_bytes},
                      {"solo_s", t.solo_s},
                      {"weight_transfer_s", t.weight_transfer_s},
                      {"sp_degree", t.sp_degree}});
      }
      if (!ts.empty()) row["templates"] = ts;
      rows.push_back(row);
    }
    core::Json pj = {{"device", p.device},
                     {"gpus", p.gpus},
                     {"model", p.model},
                     {"load", p.load},
                     {"rate_rps", p.rate_rps},
                     {"rows", rows},
                     {"best_deployed", p.best_deployed}};
    const auto ratio = [](double v) {
      return std::isfinite(v) ? core::Json(v) : std::isinf(v) ? core::Json("inf") : core::Json();
    };
    pj["xema_over_best"] = ratio(p.ratio);
    pj["xema_shed_over_best"] = ratio(p.ratio_shed);
    points.push_back(pj);
  }
  const auto summary = [](const DeployedSweepReport::Summary& s) {
    return core::Json{{"xema_at_least_best", s.xema_at_least_best},
                      {"xema_infeasible", s.xema_infeasible},
                      {"infinite_ratios", s.infinite},
                      {"ratio_max", s.ratio_max},
                      {"ratio_max_at", s.ratio_max_at}};
  };
  return {{"label", "modeled"},
          {"points", points},
          {"xema", summary(r.serve_all)},
          {"xema_shed", summary(r.shed)}};
}

}  // namespace tessera::xema
