// `tessera xema bench`: the serving sweep (xema/serve/policy_bench.h): in-process servers per
// memory policy and budget, the same open-loop arrivals at each rate, SLO attainment at each
// SLO scale against one isolated latency, and xema against the best other policy.
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/xema/request_options.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "xema/serve/policy_bench.h"

namespace tessera::cli {
namespace {

struct XemaBenchArgs {
  std::vector<std::string> policies = xema::MemoryPolicyNames();
  std::vector<std::string> budgets;
  std::vector<double> rates = {0.5, 1};
  std::vector<double> slo_scales = {2, 5, 10};
  std::string mix;
  double duration_s = 20;
  uint64_t seed = 1;
  int devices = 1;
  int queue = 16;
  OffloadArgs link;  // the host link of offload, caching and xema
  std::string json_path;
};

std::string Percent(double f) { return core::Fixed(100 * f, 1) + "%"; }

core::Status RunBench(const XemaBenchArgs& a) {
  xema::PolicyBenchOptions o;
  for (const std::string& p : a.policies) {
    ASSIGN_OR_RETURN(xema::MemoryPolicy policy, xema::ParseMemoryPolicy(p));
    o.policies.push_back(policy);
  }
  for (const std::string& b : a.budgets) {
    auto bytes = core::ParseByteSize(b, 1);
    if (!bytes.ok()) return bytes.status().WithPrefix("--budgets");
    o.budgets_bytes.push_back(*bytes);
  }
  o.rates_rps = a.rates;
  o.slo_scales = a.slo_scales;
  ASSIGN_OR_RETURN(o.mix, xema::ReadMix(a.mix));
  o.duration_s = a.duration_s;
  o.seed = a.seed;
  o.devices = a.devices;
  o.queue_capacity = a.queue;
  o.host_gbps = a.link.host_gbps;
  o.time_scale = a.link.time_scale;
  std::unique_ptr<core::ProgressBar> bar;
  o.progress = [&bar](int done, int total, const std::string&) {
    if (!bar) bar = std::make_unique<core::ProgressBar>("xema bench", total);
    bar->Update(done);
  };
  ASSIGN_OR_RETURN(xema::PolicyBenchReport r, xema::RunPolicyBench(o));
  if (bar) bar->Done();
  for (size_t t = 0; t < r.labels.size(); ++t) {
    std::printf("template %s: isolated latency %.3f s\n", r.labels[t].c_str(), r.isolated_s[t]);
  }
  // One row per (budget, rate, scale), one column per policy.
  std::vector<std::string> header = {"budget", "rate/s", "SLO x"};
  for (xema::MemoryPolicy p : o.policies) header.push_back(xema::MemoryPolicyName(p));
  header.push_back("xema / best");
  core::Table t(header);
  std::map<std::tuple<int64_t, double, double>, std::vector<const xema::PolicyBenchPoint*>> rows;
  for (const xema::PolicyBenchPoint& p : r.points) {
    rows[{p.budget_bytes, p.rate_rps, p.slo_scale}].push_back(&p);
  }
  for (const auto& [key, points] : rows) {
    const auto& [budget, rate, scale] = key;
    std::vector<std::string> row = {core::FormatBytes(budget), core::Fixed(rate, 2),
                                    core::Fixed(scale, 1)};
    for (const xema::PolicyBenchPoint* p : points) {
      if (!p->refused.empty()) {  // the load generator stopped: no template was served alone
        row.push_back("none served");
        continue;
      }
      row.push_back(Percent(p->attainment) +
                    (p->rejected_507 > 0 ? " (" + std::to_string(p->rejected_507) + " OOM)" : ""));
    }
    std::string ratio = "-";
    for (const xema::PolicyBenchComparison& c : r.comparisons) {
      if (c.budget_bytes == budget && c.rate_rps == rate && c.slo_scale == scale) {
        ratio = std::isinf(c.ratio) ? "inf (vs " + c.best_baseline + ")"
                                    : core::Fixed(c.ratio, 2) + "x (vs " + c.best_baseline + ")";
      }
    }
    row.push_back(ratio);
    t.AddRow(row);
  }
  std::printf("%s", t.Render().c_str());
  if (!r.comparisons.empty()) {
    std::printf(
        "xema >= the best other policy (within 2 points) at %d of %zu points; xema / best: min "
        "%.2fx, median %.2fx, max %.2fx over finite ratios, %d points where only xema served "
        "any request within its SLO (the paper reports up to 3.7x)\n",
        r.xema_at_least_best, r.comparisons.size(), r.ratio_min, r.ratio_median, r.ratio_max,
        r.infinite_ratios);
  }
  std::printf("(measured on this machine: one core per device, wall-clock latencies)\n");
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, xema::ToJson(r)));
  return core::Status::Ok();
}

}  // namespace

void AddXemaBench(CLI::App* xema, Action* action) {
  auto a = std::make_shared<XemaBenchArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand(
      "bench", "Sweep memory policies x budgets x rates x SLO scales on the same arrivals");
  ListOption(c, "--policies", &a->policies, "memory policies, comma separated");
  ListOption(c, "--budgets", &a->budgets, "device budgets, comma separated, e.g. 48MiB,64MiB")
      ->required();
  ListOption(c, "--rates", &a->rates, "arrival rates per second, comma separated",
             PositiveNumber(10000));
  ListOption(c, "--slo-scales", &a->slo_scales, "SLO = scale x isolated latency, comma separated",
             PositiveNumber(1e6));
  c->add_option("--mix", a->mix, "templates: a JSON file or inline (as xema loadgen)")->required();
  paths->RecordInput("--mix", &a->mix);
  c->add_option("--duration", a->duration_s, "seconds of arrivals per point")
      ->check(PositiveNumber(86400))
      ->capture_default_str();
  c->add_option("--seed", a->seed, "arrival and template seed (the same at every point)")
      ->check(Seed())
      ->capture_default_str();
  c->add_option("--devices", a->devices, "serving devices per server")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--queue", a->queue, "requests that may wait for a device")
      ->transform(Integer(1, 100000))
      ->capture_default_str();
  AddHostLinkOptions(c, &a->link);
  paths->Output(c, "--json", &a->json_path, "write the sweep as JSON here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunBench(*a); }); });
}

}  // namespace tessera::cli
