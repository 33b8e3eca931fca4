// ElasticPlan: who computes what in one epoch of an elastic job -- the live pipelines, each a
// chain of tensor-parallel groups with the layer slots they run, the micro-batches each
// pipeline takes, which processes hold each slot's state, and the state transfers that make a
// new holder ready -- and the pure function that derives the next plan when processes die.
//
// Every worker and the coordinator compute the plan themselves from the same inputs (the
// job's shape and slot costs, the previous plan, the set of dead world ids) and compare the
// 64-bit digest of its canonical JSON at the commit vote, so no plan is ever shipped.
//
// Rules of Replan (the spec's recovery flow, steps 2 and 4):
//  - The failure domain is a tensor-parallel group: a group with a dead member leaves; its
//    live members become spares (they still hold the state they had, and serve as transfer
//    sources).
//  - A pipeline that lost groups re-partitions all slots over its remaining groups, in their
//    order, with MinimaxPartition (speeds 1; `held` = the slots each group ran before, so the
//    second pass moves the fewest bytes). A pipeline whose partition does not fit the memory
//    caps is dissolved (its groups become spares); a pipeline with no group left is gone.
//    Pipelines that lost nothing keep their partition.
//  - Micro-batches: AssignMicroBatches over the live pipelines' (stages, tau); the global batch
//    never changes.
//  - Holders of (slot, tp rank r): rank r of the group running the slot in each live pipeline.
//    A new holder receives the slot's state from a live process that held it in the previous
//    plan (spares included), the source with the fewest bytes assigned so far, ties to the
//    lower world id. A (slot, r) with no live holder left is unrecoverable: FailedPrecondition
//    "unrecoverable: block 6 (tp rank 1) was held by ranks 3, 11 only, all dead".
//  - No live pipeline: FailedPrecondition "unrecoverable: no pipeline has a live group ...".
// The torchft policy (the baseline users know: TorchFT drops the replica group of a dead rank
// and averages over the participants) instead drops every pipeline that lost a group -- its
// live members become spares, nothing moves -- and keeps each surviving pipeline's own
// micro-batches [d M/dp, (d+1) M/dp): the global batch shrinks to the participants' share, and
// the loss is normalised by the participating tokens.
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "elaswave/job_shape.h"
#include "elaswave/partition.h"

namespace tessera::elaswave {

struct PlanStage {
  std::vector<int> ranks;            // world ids of the TP group, by tp rank
  int slot_begin = 0, slot_end = 0;  // runs slots [slot_begin, slot_end)
};

struct PlanPipeline {
  int replica = 0;                // the data-parallel replica it started as
  std::vector<PlanStage> stages;  // in pipeline order
  int64_t micro_batches = 0;      // m_p
  int64_t first_micro_batch = 0;  // runs ids [first, first + m_p)
  double tau_s = 0;               // slowest stage per micro-batch (modeled, slot costs)
};

struct StateTransfer {
  int slot = 0, tp_rank = 0;
  int src = 0, dst = 0;  // world ids
  int64_t bytes = 0;
};

struct ElasticPlan {
  int64_t epoch = 0;
  std::set<int> dead;       // every world id dead so far
  std::vector<int> spares;  // live processes that compute nothing
  std::vector<PlanPipeline> pipelines;
  std::vector<StateTransfer> transfers;  // to make this plan's holders ready
  uint64_t digest = 0;                   // FNV-1a of ToJson() without the digest

  // World ids of the processes that run (slot, tp_rank), in pipeline order.
  std::vector<int> Holders(int slot, int tp_rank) const;
  // Where world id w computes: pipeline index and stage index, or {-1, -1} for a spare/dead.
  std::pair<int, int> Position(int world_id) const;
  int64_t total_micro_batches() const;
  core::Json ToJson() const;
};

// Per-slot costs of a model: compute seconds per micro-batch at speed 1 (a FLOP count at a
// nominal rate; only ratios matter to the partition), state bytes per tensor-parallel rank
// (fp32 parameters, gradients and two AdamW moments) and activation bytes per micro-batch.
struct GptDims {
  int64_t vocab = 0, hidden = 0, ffn = 0, num_blocks = 0, seq = 0;
};
std::vector<SlotCost> GptSlotCosts(const GptDims& dims, int64_t micro_batch, int tp);

// The fault-free plan: every pipeline runs the minimax partition of the slots over pp stages;
// micro-batches split evenly; epoch 0.
core::StatusOr<ElasticPlan> InitialPlan(const JobShape& shape, const std::vector<SlotCost>& costs);

// kRestart: the TorchElastic way -- a death stops every process; the launcher starts the whole
// job again (a new process in the dead one's place) from the last complete disk checkpoint.
enum class RecoveryPolicy { kElasWave, kTorchFt, kRestart };
// "elaswave" | "torchft" | "restart"; InvalidArgument naming the value and the choices otherwise.
core::StatusOr<RecoveryPolicy> ParseRecoveryPolicy(const std::string& name);
std::string RecoveryPolicyName(RecoveryPolicy p);

// The plan after `newly_dead` world ids died, from the plan in force (epoch + 1).
core::StatusOr<ElasticPlan> Replan(const JobShape& shape, const std::vector<SlotCost>& costs,
                                   const ElasticPlan& previous, const std::set<int>& newly_dead,
                                   RecoveryPolicy policy = RecoveryPolicy::kElasWave);

}  // namespace tessera::elaswave
