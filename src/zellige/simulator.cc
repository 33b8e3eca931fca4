#include "zellige/simulator.h"

#include <string>
#include <vector>

#include "sim/list_schedule.h"
#include "sim/simulator.h"
#include "zellige/step_ops.h"

namespace tessera::zellige {

namespace {

core::Status ScheduleWithContention(const Plan& plan, const CostModel& cost,
                                    const internal::StepOps& ops, std::vector<double>& start,
                                    std::vector<double>& end, std::vector<double>& finish_s) {
  sim::Simulator s;
  const sim::GroupId group = s.AddGroup({[&cost](int busy) { return cost.ContentionSpeed(busy); }});
  for (int rank = 0; rank < plan.num_ranks; ++rank) s.AddResource({.group = group});
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
  for (int g = 0; g < ops.num_ops; ++g) {
    start[g] = s.start_s(g);
    end[g] = s.end_s(g);
  }
  for (int rank = 0; rank < plan.num_ranks; ++rank) finish_s[rank] = s.free_s(rank);
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<SimResult> Simulate(const Plan& plan, const workload::Batch& batch,
                                   const CostModel& cost, core::TraceWriter* trace) {
  SimResult r;
  ASSIGN_OR_RETURN(const internal::StepOps ops, internal::PrepareStep(plan, batch, cost, &r));

  // One resource per rank, one task per op: a split op is a gang over its placement's ranks,
  // and each rank takes its ops in increasing op index. Without contention every op runs at
  // its price: sim::ListSchedule over the ops in place. With contention, sim::Simulator with
  // the ranks in one group whose speed is ContentionSpeed(ranks working).
  std::vector<double> start(ops.num_ops), end(ops.num_ops);
  if (!cost.HasContention()) {
    sim::ListSchedule(
        ops.num_ops, [&](int g) -> const std::vector<int>& { return ops.place(plan, g).ranks; },
        [](int) { return 0.0; }, [&](int g) { return ops.dur_s[g]; }, start, end, r.finish_s);
  } else {
    RETURN_IF_ERROR(ScheduleWithContention(plan, cost, ops, start, end, r.finish_s));
  }
  internal::FinishStep(plan, batch, cost, ops, start, end, trace, &r);
  RETURN_IF_ERROR(internal::CheckFinite(r));
  return r;
}

}  // namespace tessera::zellige
