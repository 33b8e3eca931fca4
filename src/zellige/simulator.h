// Simulator: runs a Plan through the CostModel as one synchronous training step and
// reports what each rank does.
//
// The step is simulated layer by layer, forward then backward (the engine's order): in
// each layer every rank runs its placements in issue order (descending split degree, then
// placement order). A split sequence is a collective: it starts only when all of its
// ranks have reached it, so a rank may wait. Whole sequences never wait. Split sequences
// with the same config and rank set form one engine segment; the cost model's
// once-per-segment part (CostModel::SegmentSharedS) is charged to the first of them only.
// Contention (a profile whose solo_speedup != 1, CostModel::ContentionSpeed): prices hold
// with every rank busy; ops then progress at ContentionSpeed(number of ranks working at that
// moment), simulated from one op completion to the next, so a rank that works while others
// wait finishes sooner than its prices say. Without contention every op takes its price.
// Per-rank speeds (a profile with rank_time_factors, CostModel::RankTimeFactor): an op takes
// its price times the largest factor of its ranks.
// The makespan is the latest rank's finish plus cost.StepOverheadS() (per-step work every
// rank does once: loss, gradient all-reduce, optimizer; 0 for the analytic model); busy_s
// and finish_s cover the sequences' layers only. A placement whose config the cost model
// does not Supports() (a profile lacking it) is InvalidArgument before simulating; so is a
// price, makespan, busy/finish time or peak memory that is not finite, and a step of more than
// internal::kMaxStepOps ops (2 x layers x placements): such a step is never "feasible".
// Reports the makespan, per-rank busy time (priced work, excluding waits), max/mean busy time,
// attention communication bytes summed over ranks, and per-rank peak memory (base +
// the sum of the placed sequences' memory, an upper bound). A plan whose peak exceeds a
// rank's usable memory is infeasible (OOM): the result names the rank and the bytes over.
// Scheduling is sim/'s: sim::ListSchedule without contention, sim::Simulator (one resource
// per rank, one gang task per op, the ranks one speed group) with it; simulator_reference.h keeps
// the plain loops as oracle. Stateless; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/trace.h"
#include "workload/batch.h"
#include "zellige/cost_model.h"
#include "zellige/plan.h"

namespace tessera::zellige {

struct SimResult {
  bool feasible = true;
  std::string infeasible_reason;  // e.g. "OOM on rank 3: needs 81.2 GiB, 4.1 GiB over 77.1 GiB"
  double makespan_s = 0;          // max finish_s + cost.StepOverheadS()
  std::vector<double> busy_s;     // per rank (prices x RankTimeFactor)
  // Per rank: the exposed-communication part of busy_s (each op's time split as its
  // SeqCost's comm_s : compute_s); busy_s - comm_s is compute, finish_s - busy_s waiting.
  std::vector<double> comm_s;
  std::vector<double> finish_s;   // per rank
  std::vector<double> mem_bytes;  // per rank peak (includes the base memory)
  double max_over_mean = 0;       // of busy_s
  double attn_comm_bytes = 0;     // summed over ranks and layers
  double peak_mem_bytes = 0;      // max over ranks
  int split_sequences = 0;
};

// Validates the plan against the batch and the model's heads, then simulates. When
// `trace` is non-null, writes one track per rank (whole sequences of a rank in one layer
// are merged into one span, as the engine runs them as one call).
core::StatusOr<SimResult> Simulate(const Plan& plan, const workload::Batch& batch,
                                   const CostModel& cost, core::TraceWriter* trace = nullptr);

// Whether any plan of `batch` can be simulated under a model of `layers` layers: a plan places
// each sequence once, so its step has 2 x layers x sequences ops, and the batch alone decides
// whether that exceeds the simulator's limit (internal::kMaxStepOps). InvalidArgument naming
// the limit, the most sequences that fit and what to change; checked before planning (a
// million-sequence batch once planned for minutes, then failed here).
core::Status CheckSimulatorLimit(const workload::Batch& batch, int layers);

}  // namespace tessera::zellige
