#include "zellige/evaluate.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/units.h"

namespace tessera::zellige {

core::Status CheckBatchFits(const workload::Batch& batch, const CostModel& cost) {
  // First: the batch's size alone decides it, and the loop below is linear in it.
  RETURN_IF_ERROR(CheckSimulatorLimit(batch, cost.model().layers));
  const int n = cost.cluster().num_ranks();
  const double cap = cost.MemoryCapacityBytes();
  if (cap <= 0) {
    return core::InvalidArgument("cluster: device memory leaves no room after the model's base " +
                                 std::to_string(cost.BaseMemoryBytes() / core::kGiB) + " GiB");
  }
  for (const auto& s : batch.sequences) {
    double best = std::numeric_limits<double>::infinity();
    for (int g = 1; g <= n && g <= s.tokens; g *= 2)
      for (const auto& c : ConfigsOfDegree(g, cost.model().heads))
        best = std::min(best, cost.MemoryBytes(s.tokens, c));
    if (!std::isfinite(best)) {
      return core::InvalidArgument("sequences[" + std::to_string(s.id) +
                                   "]: " + std::to_string(s.tokens) +
                                   " tokens are priced at a memory that is not finite (check the "
                                   "cluster's, model's or profile's numbers)");
    }
    if (best > cap) {
      char buf[256];
      std::snprintf(buf, sizeof(buf),
                    "sequences[%d]: %lld tokens need %.1f GiB per rank even split over %d ranks, "
                    "above the %.1f GiB capacity",
                    s.id, static_cast<long long>(s.tokens), best / core::kGiB, n, cap / core::kGiB);
      return core::InvalidArgument(buf);
    }
  }
  return core::Status::Ok();
}

core::StatusOr<PlannerRun> RunPlanner(const PlannerEntry& entry, const workload::Batch& batch,
                                      const CostModel& cost, const PlannerOptions& options,
                                      const std::function<void(int, int)>& progress,
                                      const SolverProgressFn& solver_progress) {
  PlannerRun run;
  run.planner = entry.name;
  auto planner = entry.make();
  auto t0 = std::chrono::steady_clock::now();
  auto plan = planner->MakePlan({batch, cost, options, progress, solver_progress});
  run.solve_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!plan.ok()) return plan.status().WithPrefix(entry.name);
  run.plan = std::move(plan).value();
  // A plan that breaks the plan contract is the planner's bug (Internal). A config the cost
  // model cannot price (a knapformer.bags size a profile did not measure) or prices that are
  // not finite are the inputs' fault: InvalidArgument, named.
  core::Status shape = ValidatePlan(run.plan, batch, cost.model().heads);
  if (shape.ok() && run.plan.num_ranks != cost.cluster().num_ranks()) {
    shape = core::InvalidArgument("num_ranks: got " + std::to_string(run.plan.num_ranks) +
                                  ", must be " + std::to_string(cost.cluster().num_ranks()));
  }
  if (!shape.ok()) {
    return core::Internal(std::string(entry.name) +
                          " produced an invalid plan: " + shape.message());
  }
  for (size_t p = 0; p < run.plan.placements.size(); ++p) {
    core::Status st = cost.Supports(run.plan.placements[p].config);
    if (!st.ok()) {
      return st.WithPrefix(std::string(entry.name) + ": placements[" + std::to_string(p) + "]");
    }
  }
  auto sim = Simulate(run.plan, batch, cost);
  if (!sim.ok()) return sim.status().WithPrefix(entry.name);
  run.sim = std::move(sim).value();
  return run;
}

}  // namespace tessera::zellige
