#include "xema/serve/policy_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "core/byte_size.h"
#include "xema/serve/server.h"

namespace tessera::xema {
namespace {

constexpr double kTolerance = 0.02;  // 2 points of attainment

core::Status Validate(const PolicyBenchOptions& o) {
  if (o.policies.empty()) return core::InvalidArgument("policies: got none, need at least one");
  if (o.budgets_bytes.empty()) return core::InvalidArgument("budgets: got none, need at least one");
  if (o.rates_rps.empty()) return core::InvalidArgument("rates: got none, need at least one");
  if (o.slo_scales.empty()) {
    return core::InvalidArgument("slo-scales: got none, need at least one");
  }
  if (o.mix.empty()) return core::InvalidArgument("mix: got no templates, need at least one");
  for (double r : o.rates_rps) {
    if (!(r > 0) || r > 1e4) {
      return core::InvalidArgument(fmt::format("rates: got {}, must be in (0, 1e4]", r));
    }
  }
  for (double s : o.slo_scales) {
    if (!(s > 0) || s > 1e6) {
      return core::InvalidArgument(fmt::format("slo-scales: got {}, must be in (0, 1e6]", s));
    }
  }
  if (!(o.duration_s > 0) || o.duration_s > 86400) {
    return core::InvalidArgument(
        fmt::format("duration: got {}, must be in (0, 86400] s", o.duration_s));
  }
  return core::Status::Ok();
}

core::StatusOr<std::unique_ptr<DiffusionServer>> StartServer(const PolicyBenchOptions& o,
                                                             MemoryPolicy policy, int64_t budget,
                                                             int devices) {
  ServerOptions so;
  so.policy = policy;
  so.budget_bytes = budget;
  so.devices = devices;
  so.queue_capacity = o.queue_capacity;
  so.host_gbps = o.host_gbps;
  so.time_scale = o.time_scale;
  RETURN_IF_ERROR(ValidateServerOptions(so).WithPrefix(
      fmt::format("policy {}, budget {}", MemoryPolicyName(policy), core::FormatBytes(budget))));
  return DiffusionServer::Start(so);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void ComparePolicies(PolicyBenchReport* report) {
  report->comparisons.clear();
  using Key = std::tuple<int64_t, double, double>;
  std::map<Key, std::vector<const PolicyBenchPoint*>> by_point;
  for (const PolicyBenchPoint& p : report->points) {
    by_point[{p.budget_bytes, p.rate_rps, p.slo_scale}].push_back(&p);
  }
  std::vector<double> finite;
  report->xema_at_least_best = 0;
  report->infinite_ratios = 0;
  for (const auto& [key, points] : by_point) {
    const PolicyBenchPoint* xema = nullptr;
    const PolicyBenchPoint* best = nullptr;
    for (const PolicyBenchPoint* p : points) {
      if (p->policy == MemoryPolicy::kXema) {
        xema = p;
      } else if (best == nullptr || p->attainment > best->attainment) {
        best = p;
      }
    }
    if (xema == nullptr || best == nullptr) continue;
    PolicyBenchComparison c;
    std::tie(c.budget_bytes, c.rate_rps, c.slo_scale) = key;
    c.xema = xema->attainment;
    c.best = best->attainment;
    c.best_baseline = MemoryPolicyName(best->policy);
    c.xema_minus_best = c.xema - c.best;
    if (c.best > 0) {
      c.ratio = c.xema / c.best;
      finite.push_back(c.ratio);
    } else {
      c.ratio = c.xema > 0 ? std::numeric_limits<double>::infinity() : 1.0;
      if (c.xema > 0) ++report->infinite_ratios;
      if (c.xema == 0) finite.push_back(1.0);
    }
    if (c.xema >= c.best - kTolerance) ++report->xema_at_least_best;
    report->comparisons.push_back(c);
  }
  report->ratio_min = finite.empty() ? 0 : *std::min_element(finite.begin(), finite.end());
  report->ratio_max = finite.empty() ? 0 : *std::max_element(finite.begin(), finite.end());
  report->ratio_median = Median(finite);
}

core::StatusOr<PolicyBenchReport> RunPolicyBench(const PolicyBenchOptions& options) {
  RETURN_IF_ERROR(Validate(options));
  PolicyBenchOptions o = options;
  if (o.time_scale == 0 && std::any_of(o.policies.begin(), o.policies.end(),
                                       [](MemoryPolicy p) { return UsesHostTier(p); })) {
    ASSIGN_OR_RETURN(runtime::TimeScale scale, HostLinkTimeScale(0));  // one scale for every server
    o.time_scale = scale.scale;
  }
  PolicyBenchReport report;
  const int total =
      1 + static_cast<int>(o.policies.size() * o.budgets_bytes.size() * o.rates_rps.size());
  int done = 0;
  // 1. The isolated latency of every template: policy none, an ample budget, one device.
  {
    ASSIGN_OR_RETURN(std::unique_ptr<DiffusionServer> server,
                     StartServer(o, MemoryPolicy::kNone, o.reference_budget_bytes, 1));
    LoadgenOptions lo;
    lo.url = server->url();
    lo.mix = o.mix;
    lo.rate_rps = 1e-3;  // no arrivals in the duration: the solo runs only
    lo.duration_s = 1;
    lo.seed = o.seed;
    ASSIGN_OR_RETURN(LoadgenReport solo, RunLoadgen(lo));
    for (const TemplateLoad& t : solo.templates) {
      if (!t.solo_error.empty()) {
        return core::FailedPrecondition(
            fmt::format("template {} cannot run alone even at the reference budget {}: {}", t.label,
                        core::FormatBytes(o.reference_budget_bytes), t.solo_error));
      }
      report.labels.push_back(t.label);
      report.isolated_s.push_back(t.solo_latency_s);
    }
    if (o.progress) o.progress(++done, total, "isolated latencies");
  }
  // 2. Every policy x budget x rate on the same arrivals.
  for (MemoryPolicy policy : o.policies) {
    for (int64_t budget : o.budgets_bytes) {
      ASSIGN_OR_RETURN(std::unique_ptr<DiffusionServer> server,
                       StartServer(o, policy, budget, o.devices));
      for (double rate : o.rates_rps) {
        const std::string label =
            fmt::format("{} {} {} rps", MemoryPolicyName(policy), core::FormatBytes(budget), rate);
        LoadgenOptions lo;
        lo.url = server->url();
        lo.mix = o.mix;
        lo.rate_rps = rate;
        lo.duration_s = o.duration_s;
        lo.seed = o.seed;
        lo.slo_scale = o.slo_scales.front();
        lo.reference_solo_s = report.isolated_s;
        auto run = RunLoadgen(lo);
        if (!run.ok() && run.status().code() != core::StatusCode::kFailedPrecondition) {
          return run.status().WithPrefix(label);
        }
        for (double scale : o.slo_scales) {
          PolicyBenchPoint p;
          p.policy = policy;
          p.budget_bytes = budget;
          p.rate_rps = rate;
          p.slo_scale = scale;
          if (run.ok()) {  // else no template is served at this budget: 0 attainment
            p.attainment = AttainmentAt(*run, report.isolated_s, scale);
            p.planned = run->planned;
            p.completed = run->completed;
            for (const auto& [status, count] : run->status_counts) {
              if (status == 507) {
                p.rejected_507 += count;
              } else if (status != 200) {
                p.other_errors += count;
              }
            }
            p.other_errors += run->transport_errors + run->not_sent;
            p.latency_p50_s = run->latency_p50_s;
            p.latency_p99_s = run->latency_p99_s;
          } else {
            p.refused = run.status().message();
          }
          report.points.push_back(p);
        }
        if (o.progress) o.progress(++done, total, label);
      }
      server->Stop();
    }
  }
  ComparePolicies(&report);
  return report;
}

core::Json ToJson(const PolicyBenchReport& r) {
  core::Json points = core::Json::array();
  for (const PolicyBenchPoint& p : r.points) {
    points.push_back({{"policy", MemoryPolicyName(p.policy)},
                      {"budget_bytes", p.budget_bytes},
                      {"rate_rps", p.rate_rps},
                      {"slo_scale", p.slo_scale},
                      {"attainment", p.attainment},
                      {"planned", p.planned},
                      {"completed", p.completed},
                      {"rejected_507", p.rejected_507},
                      {"other_errors", p.other_errors},
                      {"refused", p.refused},
                      {"latency_p50_s", p.latency_p50_s},
                      {"latency_p99_s", p.latency_p99_s}});
  }
  core::Json comparisons = core::Json::array();
  for (const PolicyBenchComparison& c : r.comparisons) {
    comparisons.push_back(
        {{"budget_bytes", c.budget_bytes},
         {"rate_rps", c.rate_rps},
         {"slo_scale", c.slo_scale},
         {"xema", c.xema},
         {"best_baseline", c.best_baseline},
         {"best", c.best},
         {"xema_minus_best", c.xema_minus_best},
         {"ratio", std::isinf(c.ratio) ? core::Json("inf") : core::Json(c.ratio)}});
  }
  return {{"templates", r.labels},
          {"isolated_s", r.isolated_s},
          {"points", points},
          {"comparisons", comparisons},
          {"xema_at_least_best", r.xema_at_least_best},
          {"ratio_min", r.ratio_min},
          {"ratio_median", r.ratio_median},
          {"ratio_max", r.ratio_max},
          {"infinite_ratios", r.infinite_ratios}};
}

}  // namespace tessera::xema
