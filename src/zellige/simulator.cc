#include "zellige/simulator.h"

#include <string>
#include <vector>

#include "sim/simulator.h"
#include "zellige/step_ops.h"

namespace tessera::zellige {

core::StatusOr<SimResult> Simulate(const Plan& plan, const Batch& batch, const CostModel& cost,
                                   core::TraceWriter* trace) {
  SimResult r;
  ASSIGN_OR_RETURN(const internal::StepOps ops, internal::PrepareStep(plan, batch, cost, &r));
  const int n = plan.num_ranks;

  // One resource per rank, one task per op: a split op is a gang over its placement's ranks,
  // and each rank takes its ops in the order added (increasing op index). With contention
  // all ranks form one group whose speed is ContentionSpeed(ranks working); without it every
  // speed is 1 and sim::Simulator runs the list schedule.
  sim::Simulator s;
  sim::GroupId group = sim::kNoGroup;
  if (cost.HasContention()) {
    group = s.AddGroup({[&cost](int busy) { return cost.ContentionSpeed(busy); }});
  }
  for (int rank = 0; rank < n; ++rank) s.AddResource({.group = group});
  int64_t task_ranks = 0;
  for (const Placement& pl : plan.placements) task_ranks += pl.ranks.size();
  s.Reserve(ops.num_ops, task_ranks * 2 * ops.layers);
  for (int g = 0; g < ops.num_ops; ++g) {
    s.AddTask({.resources = ops.place(plan, g).ranks, .work_s = ops.dur_s[g]});
  }
  const sim::RunStats stats = s.Run();
  if (stats.unfinished > 0) {
    return core::Internal("Simulate: " + std::to_string(stats.unfinished) +
                          " ops never ran (collective order broken)");
  }

  std::vector<double> start(ops.num_ops), end(ops.num_ops);
  for (int g = 0; g < ops.num_ops; ++g) {
    start[g] = s.start_s(g);
    end[g] = s.end_s(g);
  }
  for (int rank = 0; rank < n; ++rank) r.finish_s[rank] = s.free_s(rank);
  internal::FinishStep(plan, batch, cost, ops, start, end, trace, &r);
  return r;
}

}  // namespace tessera::zellige
