#include "zellige/evaluate.h"

#include <chrono>
#include <cstdio>
#include <limits>

#include "core/units.h"

namespace tessera::zellige {

core::Status CheckBatchFits(const workload::Batch& batch, const CostModel& cost) {
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
                                      const CostModel& cost, const PlannerOptions& options) {
  PlannerRun run;
  run.planner = entry.name;
  auto planner = entry.make();
  auto t0 = std::chrono::steady_clock::now();
  auto plan = planner->MakePlan({batch, cost, options});
  run.solve_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!plan.ok()) return plan.status().WithPrefix(entry.name);
  run.plan = std::move(plan).value();
  auto sim = Simulate(run.plan, batch, cost);
  if (!sim.ok()) {
    return core::Internal(std::string(entry.name) +
                          " produced an invalid plan: " + sim.status().message());
  }
  run.sim = std::move(sim).value();
  return run;
}

}  // namespace tessera::zellige
