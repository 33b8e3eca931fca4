// Scaling of the zellige planner: ranks x mixtures, solve time (measured on this machine,
// min / median / max over --repeats runs of each batch) and the plan's max rank load over
// the planner's proven lower bound (modeled), plus the simulated makespan over the bound.
// Clusters: --base scaled to ranks / ranks_per_node nodes (h100x64: 16, 64, 256, 1024 ranks
// on 2, 8, 32, 128 nodes). Prints markdown; --csv writes one row per batch for
// plot_planner_scaling.py.
// Example: bench_planner_scaling --ranks 16,64,256,1024 --mixes v35,v50,v60 --batches 2
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/table.h"
#include "hw/cluster.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/evaluate.h"

using namespace tessera;           // NOLINT
using namespace tessera::zellige;  // NOLINT

namespace {

struct Row {
  int ranks = 0;
  std::string mix;
  int seed = 0;
  size_t sequences = 0;
  std::vector<double> solve_ms;
  double load_s = 0, bound_s = 0, makespan_s = 0;
  int cells = 0, cells_planned = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Solve time and quality of the zellige planner from 16 to 1,024 ranks"};
  std::string base = "h100x64", model_name = "wan2.1-1.3b", csv;
  std::vector<int> ranks = {16, 64, 256, 1024};
  std::vector<std::string> mixes = {"v35", "v50", "v60"};
  int64_t load = 350000;
  int batches = 2, repeats = 3;
  std::vector<std::string> options;
  app.add_option("--base", base, "cluster preset or JSON whose node count is scaled")
      ->capture_default_str();
  app.add_option("--model", model_name)->capture_default_str();
  app.add_option("--ranks", ranks)->delimiter(',');
  app.add_option("--mixes", mixes)->delimiter(',');
  app.add_option("--load", load, "tokens per GPU")->capture_default_str();
  app.add_option("--batches", batches, "seeds 1..N per cell")->capture_default_str();
  app.add_option("--repeats", repeats, "timed runs per batch")->capture_default_str();
  app.add_option("--option", options, "planner option key=value");
  app.add_option("--csv", csv, "write one row per batch here");
  CLI11_PARSE(app, argc, argv);

  auto cluster0 = hw::LoadCluster(base);
  auto model = models::LoadDitModel(model_name);
  if (!cluster0.ok() || !model.ok()) {
    std::fprintf(stderr, "%s\n",
                 (!cluster0.ok() ? cluster0.status() : model.status()).message().c_str());
    return 1;
  }
  PlannerOptions popts;
  for (const auto& kv : options) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "--option: got '%s', must be key=value\n", kv.c_str());
      return 1;
    }
    popts[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  const PlannerEntry& zellige = **FindPlanner("zellige");
  std::vector<Row> rows;
  for (int n : ranks) {
    hw::Cluster cl = *cluster0;
    if (n % cl.ranks_per_node != 0) {
      std::fprintf(stderr, "--ranks: %d is not a multiple of %d ranks per node\n", n,
                   cl.ranks_per_node);
      return 1;
    }
    cl.nodes = n / cl.ranks_per_node;
    cl.name = base + "@" + std::to_string(n);
    AnalyticCostModel cost(cl, *model);
    for (const auto& mix : mixes) {
      auto pct = workload::ParseMixture(mix);
      if (!pct.ok()) {
        std::fprintf(stderr, "%s\n", pct.status().message().c_str());
        return 1;
      }
      for (int seed = 1; seed <= batches; ++seed) {
        auto batch = workload::GenerateBatch({*pct, load, 15, n, uint64_t(seed)});
        if (!batch.ok()) return 1;
        Row r;
        r.ranks = n;
        r.mix = mix;
        r.seed = seed;
        r.sequences = batch->sequences.size();
        auto run = RunPlanner(zellige, *batch, cost, popts);  // validated and simulated
        if (!run.ok()) {
          std::fprintf(stderr, "%d ranks %s seed %d: %s\n", n, mix.c_str(), seed,
                       run.status().ToString().c_str());
          return 1;
        }
        r.solve_ms.push_back(run->solve_ms);
        r.load_s = run->plan.stats.max_rank_load_s;
        r.bound_s = run->plan.stats.lower_bound_s;
        r.makespan_s = run->sim.makespan_s - cost.StepOverheadS();
        r.cells = run->plan.stats.cells;
        r.cells_planned = run->plan.stats.cells_planned;
        for (int k = 1; k < repeats; ++k) {
          auto planner = zellige.make();
          const auto t0 = std::chrono::steady_clock::now();
          auto again = planner->MakePlan({*batch, cost, popts});
          r.solve_ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
          if (!again.ok()) return 1;
        }
        std::fprintf(stderr, "%d ranks %s seed %d: %.1f ms\n", n, mix.c_str(), seed,
                     Median(r.solve_ms));
        rows.push_back(std::move(r));
      }
    }
  }
  std::printf(
      "zellige on %s scaled to N ranks, %s, 15 s videos, %lld tokens/GPU, seeds 1..%d, %d timed "
      "runs each. Solve ms measured (this machine); load and makespan modeled; bound = proven "
      "lower bound on the max rank load.\n\n",
      base.c_str(), model->name.c_str(), static_cast<long long>(load), batches, repeats);
  core::Table t({"ranks", "mix", "sequences", "cells (distinct)", "solve ms min", "median", "max",
                 "load over bound %", "makespan over bound %"});
  std::map<int, std::vector<double>> median_by_ranks;
  for (const Row& r : rows) {
    const double med = Median(r.solve_ms);
    median_by_ranks[r.ranks].push_back(med);
    t.AddRow({std::to_string(r.ranks), r.mix, std::to_string(r.sequences),
              std::to_string(r.cells) + " (" + std::to_string(r.cells_planned) + ")",
              core::Fixed(*std::min_element(r.solve_ms.begin(), r.solve_ms.end()), 1),
              core::Fixed(med, 1),
              core::Fixed(*std::max_element(r.solve_ms.begin(), r.solve_ms.end()), 1),
              core::Fixed(100 * (r.load_s / r.bound_s - 1), 3),
              core::Fixed(100 * (r.makespan_s / r.bound_s - 1), 3)});
  }
  std::printf("%s\n", t.Render().c_str());
  std::printf("median solve ms per rank count (median over its batches):");
  double prev_ms = 0;
  int prev_n = 0;
  for (auto& [n, v] : median_by_ranks) {
    const double ms = Median(v);
    std::printf(" %d: %.1f", n, ms);
    if (prev_n > 0)
      std::printf(" (x%.2f for x%.0f ranks)", ms / prev_ms, static_cast<double>(n) / prev_n);
    prev_ms = ms;
    prev_n = n;
  }
  std::printf("\n");
  if (!csv.empty()) {
    std::ofstream out(csv);
    out << "ranks,mix,seed,sequences,cells,cells_planned,solve_ms_min,solve_ms_median,solve_ms_max,"
           "load_s,"
           "bound_s,makespan_s\n";
    for (const Row& r : rows) {
      out << r.ranks << ',' << r.mix << ',' << r.seed << ',' << r.sequences << ',' << r.cells << ','
          << r.cells_planned << ',' << *std::min_element(r.solve_ms.begin(), r.solve_ms.end())
          << ',' << Median(r.solve_ms) << ','
          << *std::max_element(r.solve_ms.begin(), r.solve_ms.end()) << ',' << r.load_s << ','
          << r.bound_s << ',' << r.makespan_s << '\n';
    }
  }
  return 0;
}
