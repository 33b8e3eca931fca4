#include "zellige/simulator_reference.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "zellige/step_ops.h"

namespace tessera::zellige {

core::StatusOr<SimResult> SimulateReference(const Plan& plan, const workload::Batch& batch,
                                            const CostModel& cost, core::TraceWriter* trace) {
  SimResult r;
  ASSIGN_OR_RETURN(const internal::StepOps ops, internal::PrepareStep(plan, batch, cost, &r));
  const int n = plan.num_ranks, num_ops = ops.num_ops;
  auto place_of = [&](int g) -> const Placement& { return ops.place(plan, g); };
  const std::vector<double>& dur = ops.dur_s;
  std::vector<double> start(num_ops, 0.0), end(num_ops, 0.0);
  std::vector<double>& t = r.finish_s;
  if (!cost.HasContention()) {
    // Every op runs at its price: list scheduling, a split op starts when its last rank is free.
    for (int g = 0; g < num_ops; ++g) {
      double st = 0;
      for (int rank : place_of(g).ranks) st = std::max(st, t[rank]);
      start[g] = st;
      end[g] = st + dur[g];
      for (int rank : place_of(g).ranks) t[rank] = end[g];
    }
  } else {
    // Shared machine: every running op progresses at ContentionSpeed(ranks working now);
    // advance from one op completion to the next.
    std::vector<std::vector<int>> ops_of(n);
    for (int g = 0; g < num_ops; ++g)
      for (int rank : place_of(g).ranks) ops_of[rank].push_back(g);
    std::vector<size_t> pos(n, 0);
    std::vector<int> arrived(num_ops, 0);
    std::vector<double> remaining(num_ops, 0.0);
    std::vector<int> running, done;
    double now = 0;
    auto arrive = [&](int rank) {  // `rank` reaches its next op; it starts once all have
      if (pos[rank] == ops_of[rank].size()) return;
      const int g = ops_of[rank][pos[rank]];
      if (++arrived[g] < static_cast<int>(place_of(g).ranks.size())) return;
      start[g] = now;
      remaining[g] = dur[g];
      running.push_back(g);
    };
    for (int rank = 0; rank < n; ++rank) arrive(rank);
    while (!running.empty()) {
      int busy = 0;
      double step = remaining[running.front()];
      for (int g : running) {
        busy += static_cast<int>(place_of(g).ranks.size());
        step = std::min(step, remaining[g]);
      }
      now += step / cost.ContentionSpeed(busy);
      std::vector<int> still;
      done.clear();
      for (int g : running) {
        remaining[g] -= step;
        (remaining[g] <= 1e-12 * dur[g] ? done : still).push_back(g);
      }
      running = std::move(still);
      for (int g : done) {
        end[g] = now;
        for (int rank : place_of(g).ranks) {
          t[rank] = now;
          ++pos[rank];
          arrive(rank);
        }
      }
    }
    for (int rank = 0; rank < n; ++rank) {
      if (pos[rank] != ops_of[rank].size()) {
        return core::Internal("Simulate: rank " + std::to_string(rank) +
                              " stopped before its last op (collective order broken)");
      }
    }
  }
  internal::FinishStep(plan, batch, cost, ops, start, end, trace, &r);
  RETURN_IF_ERROR(internal::CheckFinite(r));
  return r;
}

}  // namespace tessera::zellige
