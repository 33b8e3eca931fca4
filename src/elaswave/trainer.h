// ElasticTrainer: one worker's part of ElasWave's data x pipeline x tensor-parallel training
// of SmallGpt, under an ElasticPlan (elastic_plan.h), on any comm::Communicator whose
// world_ranks() are the world ids of the live processes (the elastic communicator in real
// processes; the in-process backend in tests).
//
// One step t (Compute then, after the coordinator's commit, Apply):
//  - Data: the global batch of B sequences is MakeSyntheticGptBatch(V, B, seq, data_seed, t);
//    micro-batch k holds rows pi_t[k b, (k + 1) b) (microbatch_counts.h): the same for any
//    number of pipelines. Pipeline p runs ids [first_p, first_p + m_p) under 1F1B (stage j of
//    S warms up with min(S - j - 1, m_p) forwards); activations and their gradients go between
//    stages as point-to-point messages tagged by micro-batch id.
//  - Loss = (1 / N_tok) sum_k sum_{i in mu_k} l_i with N_tok = B x seq, the target tokens of
//    the global batch: backward starts from 1 / N_tok whatever the number of survivors (under
//    the torchft policy's plans, N_tok counts the micro-batches that run: the batch shrinks).
//  - Gradients: after each micro-batch's backward, each held slot's fp32 gradient is added to
//    an int64 accumulator at the slot's fixed-point exponent (fixed_point_grad.h; bound = the
//    slot's exact global max |g| of the previous step). The holders of a slot then sum their
//    accumulators (one int64 all-reduce per distinct holder set; for the replicated embedding
//    and head slots the holders at every tp rank, which also sums the TP partials). Integer
//    sums: any placement of the micro-batches gives the same bits. A micro-batch that would
//    overflow its slot's limit marks the slot; every process learns of it in the same reduction
//    and the step is redone with a 16-bit wider bound for the marked slots (deterministic).
//  - The per-micro-batch losses are all-reduced over the computing processes (one non-zero
//    term per entry: exact) and summed in micro-batch order.
//  - Apply: for each held slot, g = sum x 2^-e, AdamW (elementwise, per slot), bound = max |g|.
// Result: the parameters are bitwise equal to a run with any other data x pipeline layout of
// the same tensor-parallel degree (GEMM shapes depend on tp only), e.g. the single-process twin
// dp = pp = 1 -- and to the fault-free run after any recovery that keeps the global batch.
//
// Install(plan, comm) makes a plan current: runs the plan's state transfers (each process that
// is a source sends the slot's packed state, slot_store.h, to its destination), drops the slots
// this worker no longer runs, builds its stage and its communication groups (TP group, holder
// sets, the computing set; sub-communicators created in one global order). Spares take part in
// Install (as sources) and then compute nothing.
// Errors: communication errors pass through (the caller recovers); a slot the worker must run
// but does not hold after the transfers is Internal.
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "elaswave/elastic_plan.h"
#include "elaswave/fault_plan.h"
#include "elaswave/slot_store.h"
#include "models/comm_tp_ops.h"
#include "models/small_gpt_config.h"
#include "models/small_gpt_stage.h"

namespace tessera::elaswave {

struct TrainerOptions {
  JobShape shape;
  models::SmallGptConfig model;
  int64_t seq = 128;
  uint64_t data_seed = 1;
  models::AdamWOptions adamw;
};

struct StepReport {
  int64_t step = 0;
  double loss = 0;   // mean over the global batch's target tokens
  int attempts = 1;  // > 1 when a fixed-point overflow made it redo the step
};

struct SlotDigest {
  int slot = 0, tp_rank = 0;
  uint64_t digest = 0;
};

// The dims the plan's slot costs need, from a model config and the sequence length.
GptDims DimsOf(const models::SmallGptConfig& model, int64_t seq);

class ElasticTrainer {
 public:
  static core::StatusOr<std::unique_ptr<ElasticTrainer>> Create(const TrainerOptions& options,
                                                                int world_id);

  // Fresh state for the slots this worker runs under `plan` (from the model's init seed).
  core::Status InitFresh(const ElasticPlan& plan);
  // Makes `plan` current over `comm` (see above). Collective over comm.
  core::Status Install(const ElasticPlan& plan, comm::Communicator& comm);
  // Forward, backward and gradient reduction of step t. Collective over the computing processes.
  core::StatusOr<StepReport> Compute(int64_t step);
  // AdamW on every held slot from the last Compute's reduced gradients.
  core::Status Apply();

  // Called at the start of each micro-batch's forward and backward (with its global id) and of
  // the gradient reduction (-1): where the fault hooks and the emulated slow-down act.
  using PhaseHook = std::function<void(StepPhase phase, int64_t step, int64_t micro_batch)>;
  void set_phase_hook(PhaseHook hook) { hook_ = std::move(hook); }

  bool computing() const { return stage_ != nullptr; }
  SlotStore& store() { return store_; }
  int world_id() const { return world_; }
  int tp_rank() const { return options_.shape.TpRankOf(world_); }
  std::vector<SlotDigest> Digests() const;
  const ElasticPlan& plan() const { return plan_; }

 private:
  ElasticTrainer(const TrainerOptions& options, int world_id)
      : options_(options), world_(world_id), store_(options.adamw) {}
  struct Group {
    std::vector<int> worlds;  // sorted world ids
    comm::Communicator* comm = nullptr;
    std::vector<int> slots;  // held slots reduced in this group, ascending
  };
  core::StatusOr<int> RankOf(int world) const;
  core::Status LoadStageFromStore();
  core::StatusOr<StepReport> ComputeOnce(int64_t step, bool& overflow);
  core::StatusOr<models::GptBatch> MicroBatch(int64_t k) const;

  TrainerOptions options_;
  int world_;
  SlotStore store_;
  std::map<int, int64_t> slot_size_;  // parameters per slot at this tp rank
  ElasticPlan plan_;
  comm::Communicator* comm_ = nullptr;
  std::unique_ptr<models::SmallGptStage> stage_;
  std::unique_ptr<models::CommTpOps> tp_ops_;
  comm::Communicator* computing_comm_ = nullptr;
  std::vector<Group> groups_;
  int pipeline_ = -1, stage_index_ = -1;
  // Per step.
  models::GptBatch global_batch_;
  std::vector<int64_t> permutation_;
  std::map<int, std::vector<int64_t>> grad_sum_;  // per held slot
  std::map<int, int> exponent_;
  std::map<int, int> widen_bits_;  // extra bound bits after an overflow, this step
  PhaseHook hook_;
};

}  // namespace tessera::elaswave
