// The C++ side of the Python binding's overhead benchmark (bench/python/bench_plan_call.py):
// times the calls tessera.zellige.plan(lens, cluster, planner) makes inside the library
// (the batch from token counts, the cluster preset and the DiT model, the analytic cost model,
// ComparePlanners: plan + simulate) on the lengths of a JSON file ([n0, n1, ...]), `--repeats`
// times, and prints "median_ms MEDIAN min_ms MIN" on one line (measured, this machine).
//   bench_zellige_plan_call --lens lens.json [--cluster a800x16] [--planner zellige]
//                           [--repeats 21]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/json_util.h"
#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "workload/batch.h"
#include "zellige/compare_planners.h"
#include "zellige/cost_model.h"

using namespace tessera;

namespace {

core::Status PlanOnce(const std::vector<int64_t>& lens, const std::string& cluster_name,
                      const std::string& planner) {
  ASSIGN_OR_RETURN(workload::Batch batch, workload::BatchFromTokenCounts(lens, "lens", "bench"));
  ASSIGN_OR_RETURN(const zellige::PlannerEntry* entry, zellige::FindPlanner(planner));
  ASSIGN_OR_RETURN(hw::Cluster cluster, hw::LoadCluster(cluster_name));
  ASSIGN_OR_RETURN(models::DitModel model, models::LoadDitModel("wan2.1-1.3b"));
  std::unique_ptr<zellige::CostModel> cost =
      zellige::MakeAnalyticCostModel(std::move(cluster), std::move(model));
  ASSIGN_OR_RETURN(zellige::PlannerComparison cmp,
                   zellige::ComparePlanners(batch, *cost, {entry}, {}));
  if (cmp.runs.size() != 1) return core::Internal("no plan");
  return core::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times the library calls behind tessera.zellige.plan (C++ side)"};
  std::string lens_path, cluster = "a800x16", planner = "zellige";
  int repeats = 21;
  app.add_option("--lens", lens_path, "JSON file: a list of sequence lengths")->required();
  app.add_option("--cluster", cluster, "cluster preset")->capture_default_str();
  app.add_option("--planner", planner, "planner")->capture_default_str();
  app.add_option("--repeats", repeats, "timed calls")->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);
  auto j = core::ReadJsonFile(lens_path);
  if (!j.ok() || !j->is_array()) {
    std::fprintf(stderr, "--lens: %s must hold a JSON list of integers\n", lens_path.c_str());
    return 1;
  }
  std::vector<int64_t> lens;
  for (const auto& v : *j) {
    if (!v.is_number_integer()) {
      std::fprintf(stderr, "--lens: every entry must be an integer\n");
      return 1;
    }
    lens.push_back(v.get<int64_t>());
  }
  std::vector<double> ms;
  for (int r = 0; r < repeats + 1; ++r) {  // the first call warms caches and is not counted
    auto t0 = std::chrono::steady_clock::now();
    core::Status st = PlanOnce(lens, cluster, planner);
    auto t1 = std::chrono::steady_clock::now();
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 1;
    }
    if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("median_ms %.4f min_ms %.4f\n", ms[ms.size() / 2], ms.front());
  return 0;
}
