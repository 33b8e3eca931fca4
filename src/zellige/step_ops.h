// StepOps: one training step of a Plan as a list of ops for a scheduler, shared by the
// simulator (simulator.cc, on sim::Simulator) and its plain reference
// (simulator_reference.cc) so that both see the same costing and differ only in scheduling.
//
// Op g = phase * per_phase + i is placement order[i] (IssueOrder) in phase `phase`: forward
// layers 0..L-1, then backward layers L-1..0; each rank runs its ops in increasing g, and a
// split op is a collective over its placement's ranks. dur_s[g] is the op's price
// (CostModel::Cost per placement, less the once-per-segment part for all but the first
// placement of an engine segment, CostModel::SegmentSharedS) per layer times the
// placement's CostModel::RankTimeFactor. Internal to the zellige simulator.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/trace.h"
#include "workload/batch.h"
#include "zellige/cost_model.h"
#include "zellige/plan.h"
#include "zellige/simulator.h"

namespace tessera::zellige::internal {

struct StepOps {
  std::vector<int> order;  // IssueOrder(plan)
  int layers = 0;
  int per_phase = 0;  // order.size()
  int num_ops = 0;    // 2 * layers * per_phase
  std::vector<double> dur_s;
  const Placement& place(const Plan& plan, int g) const {
    return plan.placements[order[g % per_phase]];
  }
};

// The most ops one step may have (2 x layers x placements): 2^24, e.g. 30 layers x 279,620
// placements.
inline constexpr int64_t kMaxStepOps = int64_t{1} << 24;

// Validates the plan (Simulate's contract), prices it and fills `r`'s busy_s, mem_bytes,
// attn_comm_bytes and split_sequences (finish_s sized and zeroed). InvalidArgument beyond
// kMaxStepOps ops, or when a placement's price is not finite (or a time is negative).
core::StatusOr<StepOps> PrepareStep(const Plan& plan, const workload::Batch& batch,
                                    const CostModel& cost, SimResult* r);

// Given each op's start and end, writes the trace (when non-null), the makespan,
// max_over_mean and the OOM verdict into `r` (finish_s must be filled).
void FinishStep(const Plan& plan, const workload::Batch& batch, const CostModel& cost,
                const StepOps& ops, const std::vector<double>& start_s,
                const std::vector<double>& end_s, core::TraceWriter* trace, SimResult* r);

// InvalidArgument when the makespan, a rank's busy or finish time or its peak memory is not
// finite (sums of finite prices can still overflow): such a step is never "feasible".
core::Status CheckFinite(const SimResult& r);

}  // namespace tessera::zellige::internal
