// Sweeps mixtures on a cluster preset and prints the modeled comparison of every
// registered planner as markdown: mean makespan over seeds (with OOM counts), speedups
// over usp and knapformer, and a detail table at one mixture.
// Example: bench_zellige_sweep --cluster a800x16 --load 350000 --seconds 15 --seeds 5
// --json F also writes, per mixture and planner, the mean makespan and the OOM count (the data
// of bench/zellige/plot_speedup_by_mix.py).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/table.h"
#include "hw/cluster.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/evaluate.h"

using namespace tessera;           // NOLINT
using namespace tessera::zellige;  // NOLINT

namespace {

struct Agg {
  double makespan = 0, max_over_mean = 0, comm = 0, peak = 0, solve_ms = 0;
  int oom = 0, n = 0;
};

std::string Md(const core::Table& t) {
  // core::Table renders fixed-width text; turn it into a markdown table.
  std::string text = t.Render(), out;
  size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string l = text.substr(pos, end - pos);
    pos = end + 1;
    if (line++ == 1) continue;  // dashes
    std::string row = "|";
    size_t i = 0;
    while (i < l.size()) {
      size_t j = l.find("  ", i);
      while (j != std::string::npos && j + 2 < l.size() && l[j + 2] == ' ') ++j;
      std::string cell = l.substr(i, j == std::string::npos ? std::string::npos : j - i);
      while (!cell.empty() && cell.front() == ' ') cell.erase(0, 1);
      while (!cell.empty() && cell.back() == ' ') cell.pop_back();
      if (!cell.empty()) row += " " + cell + " |";
      if (j == std::string::npos) break;
      i = j + 2;
    }
    out += row + "\n";
    if (line == 1) {
      std::string sep = "|";
      for (char c : row)
        if (c == '|') sep += "---|";
      out += sep.substr(0, sep.size() - 4) + "\n";
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Modeled sweep of the placement planners over mixtures"};
  std::string cluster_name = "a800x16", model_name = "wan2.1-1.3b", detail_mix = "v50";
  std::vector<std::string> mixes = {"v35", "v40", "v45", "v50", "v55", "v60"};
  int64_t load = 350000;
  double seconds = 15;
  int seeds = 5;
  app.add_option("--cluster", cluster_name)->capture_default_str();
  app.add_option("--model", model_name)->capture_default_str();
  app.add_option("--mixes", mixes)->delimiter(',');
  app.add_option("--load", load, "tokens per GPU")->capture_default_str();
  app.add_option("--seconds", seconds, "video length")->capture_default_str();
  app.add_option("--seeds", seeds, "batches per mixture (seeds 1..N)")->capture_default_str();
  app.add_option("--detail", detail_mix, "mixture of the detail table")->capture_default_str();
  std::string json_path;
  app.add_option("--json", json_path, "also write the means and OOM counts as JSON here");
  CLI11_PARSE(app, argc, argv);

  auto cluster = hw::LoadCluster(cluster_name);
  auto model = models::LoadDitModel(model_name);
  if (!cluster.ok() || !model.ok()) {
    std::fprintf(stderr, "%s\n",
                 (!cluster.ok() ? cluster.status() : model.status()).message().c_str());
    return 1;
  }
  AnalyticCostModel cost(*cluster, *model);
  std::vector<std::string> names;
  for (const auto& e : PlannerRegistry())
    if (e.in_all) names.push_back(e.name);
  std::map<std::string, std::map<std::string, Agg>> agg;  // mix -> planner -> agg
  for (const auto& mix : mixes) {
    auto pct = workload::ParseMixture(mix);
    if (!pct.ok()) {
      std::fprintf(stderr, "%s\n", pct.status().message().c_str());
      return 1;
    }
    for (int seed = 1; seed <= seeds; ++seed) {
      auto batch =
          workload::GenerateBatch({*pct, load, seconds, cluster->num_ranks(), uint64_t(seed)});
      if (!batch.ok() || !CheckBatchFits(*batch, cost).ok()) {
        std::fprintf(stderr, "batch %s seed %d does not fit\n", mix.c_str(), seed);
        return 1;
      }
      for (const auto& e : PlannerRegistry()) {
        if (!e.in_all) continue;
        auto run = RunPlanner(e, *batch, cost, {});
        Agg& a = agg[mix][e.name];
        ++a.n;
        if (!run.ok()) {
          ++a.oom;
          continue;
        }
        a.makespan += run->sim.makespan_s;
        a.max_over_mean += run->sim.max_over_mean;
        a.comm += run->sim.attn_comm_bytes;
        a.peak = std::max(a.peak, run->sim.peak_mem_bytes);
        a.solve_ms += run->solve_ms;
        a.oom += !run->sim.feasible;
      }
    }
  }
  std::printf(
      "Modeled on %s (%s), %s, %g s videos, %lld tokens/GPU, mean of %d seeded batches "
      "per mixture. Cells: mean makespan in s; (OOM k) = k of %d batches exceed memory.\n\n",
      cluster->name.c_str(), cluster->provenance.c_str(), model->name.c_str(), seconds,
      static_cast<long long>(load), seeds, seeds);
  std::vector<std::string> header = {"mix"};
  for (const auto& n : names) header.push_back(n);
  core::Table t(header);
  for (const auto& mix : mixes) {
    std::vector<std::string> row = {mix};
    for (const auto& n : names) {
      const Agg& a = agg[mix][n];
      std::string cell = core::Fixed(a.makespan / a.n, 1);
      if (a.oom) cell += " (OOM " + std::to_string(a.oom) + ")";
      row.push_back(cell);
    }
    t.AddRow(row);
  }
  std::printf("%s\n", Md(t).c_str());
  std::printf("Speedup of each planner's mean makespan over usp (higher is better):\n\n");
  core::Table sp(header);
  for (const auto& mix : mixes) {
    std::vector<std::string> row = {mix};
    double usp = agg[mix]["usp"].makespan;
    for (const auto& n : names) row.push_back(core::Fixed(usp / agg[mix][n].makespan, 2) + "x");
    sp.AddRow(row);
  }
  std::printf("%s\n", Md(sp).c_str());
  std::printf("Detail at %s (means over seeds):\n\n", detail_mix.c_str());
  core::Table d({"planner", "makespan s", "max/mean", "attn comm vs usp", "peak mem GiB",
                 "OOM batches", "plan ms"});
  const double usp_comm = agg[detail_mix]["usp"].comm;
  for (const auto& n : names) {
    const Agg& a = agg[detail_mix][n];
    d.AddRow({n, core::Fixed(a.makespan / a.n, 1), core::Fixed(a.max_over_mean / a.n, 3),
              core::Fixed(usp_comm > 0 ? a.comm / usp_comm : 0, 2),
              core::Fixed(a.peak / (1024.0 * 1024 * 1024), 1),
              std::to_string(a.oom) + "/" + std::to_string(a.n), core::Fixed(a.solve_ms / a.n, 2)});
  }
  std::printf("%s", Md(d).c_str());
  if (!json_path.empty()) {
    core::Json planners = core::Json::object();
    for (const auto& n : names) {
      core::Json mean = core::Json::array(), oom = core::Json::array();
      for (const auto& mix : mixes) {
        const Agg& a = agg[mix][n];
        mean.push_back(a.makespan / a.n);
        oom.push_back(a.oom);
      }
      planners[n] = {{"mean_makespan_s", mean}, {"oom_batches", oom}};
    }
    core::Json out = {
        {"cluster", cluster->name}, {"model", model->name}, {"load_tokens_per_gpu", load},
        {"video_seconds", seconds}, {"seeds", seeds},       {"mixes", mixes},
        {"planners", planners},     {"label", "modeled"}};
    core::Status st = core::WriteJsonFile(json_path, out);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 1;
    }
  }
  return 0;
}
