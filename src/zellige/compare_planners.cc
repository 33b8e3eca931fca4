#include "zellige/compare_planners.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace tessera::zellige {

using core::Json;
using core::StatusOr;

StatusOr<std::vector<const PlannerEntry*>> SelectPlanners(const std::string& name) {
  std::vector<const PlannerEntry*> entries;
  if (name == "all") {
    for (const auto& e : PlannerRegistry())
      if (e.in_all) entries.push_back(&e);
    return entries;
  }
  ASSIGN_OR_RETURN(const PlannerEntry* e, FindPlanner(name));
  entries.push_back(e);
  return entries;
}

StatusOr<PlannerComparison> ComparePlanners(const workload::Batch& batch, const CostModel& cost,
                                            const std::vector<const PlannerEntry*>& planners,
                                            const PlannerOptions& options,
                                            const std::function<void(int, int)>& progress,
                                            const SolverProgressFn& solver_progress) {
  RETURN_IF_ERROR(ValidatePlannerOptions(options));
  RETURN_IF_ERROR(CheckBatchFits(batch, cost));
  PlannerComparison out;
  for (const PlannerEntry* e : planners) {
    auto run = RunPlanner(*e, batch, cost, options, progress, solver_progress);
    if (!run.ok()) {
      if (run.status().code() == core::StatusCode::kInternal) return run.status();
      if (planners.size() == 1) return run.status();
      out.failures.push_back(run.status().message());
      continue;
    }
    out.runs.push_back(std::move(run).value());
  }
  double usp_makespan = 0;
  for (const PlannerRun& r : out.runs)
    if (r.planner == "usp") usp_makespan = r.sim.makespan_s;
  for (const PlannerRun& r : out.runs) {
    PlannerComparisonRow row;
    row.planner = r.planner;
    row.makespan_s = r.sim.makespan_s;
    row.stats = r.plan.stats;
    row.vs_usp = usp_makespan > 0 ? usp_makespan / r.sim.makespan_s : 0;
    row.max_over_mean = r.sim.max_over_mean;
    row.attn_comm_bytes = r.sim.attn_comm_bytes;
    row.peak_mem_bytes = r.sim.peak_mem_bytes;
    row.split_sequences = r.sim.split_sequences;
    row.feasible = r.sim.feasible;
    if (!r.sim.feasible) row.infeasible_reason = r.sim.infeasible_reason;
    row.solve_ms = r.solve_ms;
    out.rows.push_back(std::move(row));
  }
  return out;
}

Json ToJson(const PlannerComparison& comparison) {
  Json results = Json::array();
  for (const PlannerComparisonRow& r : comparison.rows) {
    Json jr = {{"planner", r.planner},
               {"feasible", r.feasible},
               {"makespan_s", r.makespan_s},
               {"max_over_mean", r.max_over_mean},
               {"attn_comm_bytes", r.attn_comm_bytes},
               {"peak_mem_bytes", r.peak_mem_bytes},
               {"split_sequences", r.split_sequences},
               {"solve_ms", r.solve_ms}};
    if (!r.feasible) jr["infeasible_reason"] = r.infeasible_reason;
    results.push_back(jr);
  }
  return results;
}

Json RankTimeBreakdownJson(const PlannerComparison& comparison, const std::string& title) {
  Json planners = Json::array();
  for (const PlannerRun& run : comparison.runs) {
    const SimResult& sim = run.sim;
    std::vector<double> compute, comm, idle;
    for (size_t r = 0; r < sim.busy_s.size(); ++r) {
      const double c = r < sim.comm_s.size() ? sim.comm_s[r] : 0.0;
      comm.push_back(c);
      compute.push_back(sim.busy_s[r] - c);
      idle.push_back(std::max(0.0, sim.makespan_s - sim.busy_s[r]));
    }
    planners.push_back({{"planner", run.planner},
                        {"makespan_s", sim.makespan_s},
                        {"feasible", sim.feasible},
                        {"compute_s", compute},
                        {"comm_s", comm},
                        {"idle_s", idle}});
  }
  return {{"title", title}, {"label", "modeled"}, {"planners", planners}};
}

}  // namespace tessera::zellige
