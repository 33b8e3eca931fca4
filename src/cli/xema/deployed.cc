// `tessera xema deployed`: Xema against the serving configurations people deploy (diffusers
// model and sequential CPU offload, VAE slicing and tiling, xDiT at a fixed SP degree, FSDP
// sharded weights) at paper scale, modeled (xema/planner/deployed_compare.h): one row per
// (device, GPUs, model, load), SLO attainment per policy and xema / the best deployed one.
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "xema/planner/deployed_compare.h"

namespace tessera::cli {
namespace {

struct XemaDeployedArgs {
  xema::DeployedSweepOptions sweep;
  double offload_host_gbps = 0;
  std::string json_path;
};

std::string Cell(const xema::DeployedRow& r) {
  if (r.infeasible) return "infeasible";
  std::string s = core::Fixed(100 * r.attainment, 1) + "%";
  if (r.out_of_memory > 0) s += " (" + std::to_string(r.out_of_memory) + " OOM)";
  return s;
}

std::string Ratio(const xema::DeployedPoint& p, bool shed) {
  const double ratio = shed ? p.ratio_shed : p.ratio;
  if (p.rows[shed ? 1 : 0].infeasible) return "xema infeasible";
  if (std::isnan(ratio)) return "-";
  if (std::isinf(ratio)) return "inf";
  return core::Fixed(ratio, 2) + "x";
}

void PrintSummary(const char* who, const xema::DeployedSweepReport::Summary& s, size_t points) {
  std::printf(
      "%s >= the best deployed configuration (within 2 points) at %d of %zu points, infeasible "
      "at %d; %s / best deployed: max %.2fx (%s) over finite ratios, %d points where only it "
      "met any SLO\n",
      who, s.xema_at_least_best, points, s.xema_infeasible, who, s.ratio_max,
      s.ratio_max_at.empty() ? "-" : s.ratio_max_at.c_str(), s.infinite);
}

core::Status Run(const XemaDeployedArgs& a) {
  xema::DeployedSweepOptions o = a.sweep;
  o.offload_host_bytes_per_s = a.offload_host_gbps * 1e9;
  std::unique_ptr<core::ProgressBar> bar;
  o.progress = [&bar](int done, int total, const std::string&) {
    if (!bar) bar = std::make_unique<core::ProgressBar>("xema deployed", total);
    bar->Update(done);
  };
  ASSIGN_OR_RETURN(const xema::DeployedSweepReport r, xema::RunDeployedSweep(o));
  if (bar) bar->Done();
  // One table per GPU count (the policy columns differ: FSDP needs two GPUs or more).
  for (int g : o.gpus) {
    std::vector<std::string> header = {"device", "GPUs", "model", "load", "rate/s"};
    bool first = true;
    std::unique_ptr<core::Table> t;
    for (const xema::DeployedPoint& p : r.points) {
      if (p.gpus != g) continue;
      if (first) {
        for (const xema::DeployedRow& row : p.rows) header.push_back(row.policy);
        header.push_back("best deployed");
        header.push_back("xema / best");
        header.push_back("xema+shed / best");
        t = std::make_unique<core::Table>(header);
        first = false;
      }
      std::vector<std::string> cells = {p.device, std::to_string(p.gpus), p.model,
                                        core::Fixed(100 * p.load, 0) + "%",
                                        core::Fixed(p.rate_rps, 3)};
      for (const xema::DeployedRow& row : p.rows) cells.push_back(Cell(row));
      cells.push_back(p.best_deployed.empty() ? "-" : p.best_deployed);
      cells.push_back(Ratio(p, false));
      cells.push_back(Ratio(p, true));
      t->AddRow(cells);
    }
    if (t) std::printf("%s\n", t->Render().c_str());
  }
  PrintSummary("xema", r.serve_all, r.points.size());
  PrintSummary("xema+shed", r.shed, r.points.size());
  std::printf("(the paper reports up to 3.7x over existing configurations)\n");
  std::printf("(modeled: analytic traces, datasheet devices, the planner's serving simulation)\n");
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, xema::ToJson(r)));
  return core::Status::Ok();
}

}  // namespace

void AddXemaDeployed(CLI::App* xema, Action* action) {
  auto a = std::make_shared<XemaDeployedArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand(
      "deployed",
      "Xema against deployed serving configurations at paper scale (modeled): attainment per "
      "device, GPU count, model and load");
  a->sweep.devices = xema::ModeledDeviceNames();
  a->sweep.models = xema::AnalyticModelNames();
  ListOption(c, "--devices", &a->sweep.devices, "modeled GPUs, comma separated");
  ListOption(c, "--gpus", &a->sweep.gpus, "GPU counts, comma separated", Integer(1, 64));
  ListOption(c, "--models", &a->sweep.models, "analytic models, comma separated");
  ListOption(c, "--loads", &a->sweep.loads,
             "loads as shares of the GPUs' capacity at SP 1, comma separated", PositiveNumber(100));
  ListOption(c, "--policies", &a->sweep.policies,
             "deployed configurations (default: every one), comma separated");
  c->add_option("--slo-scale", a->sweep.slo_scale, "SLO = scale x the isolated latency")
      ->check(PositiveNumber(1e6))
      ->capture_default_str();
  c->add_option("--requests", a->sweep.requests,
                "expected arrivals per point (its duration: requests / rate)")
      ->check(Number(1, 1e6))
      ->capture_default_str();
  c->add_option("--seed", a->sweep.seed, "arrival seed (the same at every point)")
      ->check(Seed())
      ->capture_default_str();
  c->add_option("--max-batch", a->sweep.max_batch, "the largest batch Xema's planner tries")
      ->transform(Integer(1, 4))
      ->capture_default_str();
  c->add_option("--max-concurrency", a->sweep.max_concurrency,
                "the most requests of a template Xema runs at once on a GPU")
      ->transform(Integer(1, 16))
      ->capture_default_str();
  c->add_option("--offload-host-gbps", a->offload_host_gbps,
                "host link of the diffusers offload configurations in GB/s (accelerate copies "
                "from pageable memory); default: the device's pinned rate")
      ->check(PositiveNumber(10000));
  paths->Output(c, "--json", &a->json_path, "write every point and row as JSON here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return Run(*a); }); });
}

}  // namespace tessera::cli
