// SmallGptStage: a contiguous range of SmallGpt's layer slots (small_gpt.h), run as one
// pipeline stage on one tensor-parallel rank, with several micro-batches in flight (1F1B).
// SmallGpt itself is the stage that owns every slot, so both run the same code.
//
// Layer slots (L = num_layers): slot 0 = the embeddings (tok_emb, pos_emb); slot 1 + l =
// transformer block l (global layer l = 0..L-1); slot L + 1 = the final LayerNorm, the head
// (w_head) and the cross-entropy. A stage owns the slots [slot_begin, slot_end) and the
// parameters of those slots only, initialised exactly as the whole model's (init_seed), in one
// flat buffer: the replicated tensors first (tok_emb, pos_emb when it owns slot 0, w_head when it
// owns slot L + 1), then each owned block's w_qkv, w_proj, w_fc1, w_fc2 slices (this rank's, as
// in SmallGpt). Tensors keep their global names ("tok_emb", "layer3.w_fc1", ...), and each slot's
// parameters are contiguous (SlotParameters), so a migration can move one layer.
//
// Activations between stages are this rank's sequence-parallel rows of the residual stream:
// (M / t, h) fp32 row-major for a micro-batch of M tokens. Per micro-batch (MicroBatchKey,
// gpt_dropout.h: the step and the micro-batch's GLOBAL id, which also key the dropout masks):
//   Forward   the first stage reads the micro-batch's tokens, the others `input_act`; all but
//             the last write `output_act`; the last returns the SUM over the micro-batch's
//             target tokens of -log softmax(logits)[target] (summed over the TP ranks: every
//             rank returns the same value; other stages return 0). The activations Backward
//             needs are kept under the key (with the tokens and targets of this rank's rows,
//             so Backward does not take the batch again).
//   Backward  the last stage starts from dLoss/dlogits = (softmax - onehot) * loss_scale
//             (ElasWave: loss_scale = 1 / N_tok, N_tok the target tokens of the GLOBAL batch),
//             the others from `grad_output` = dLoss/d(output_act) (loss_scale is then unused);
//             ACCUMULATES into Gradients(), writes `grad_input` = dLoss/d(input_act) (all but
//             the first stage), and frees the micro-batch's activations.
// A step is: ZeroGradients(); Forward and Backward of each micro-batch in any order that
// respects each micro-batch's Forward-before-Backward; ReduceReplicatedGradients() once (the
// replicated tensors' gradients summed over the TP ranks, as SmallGpt does); an optimizer step.
// The arithmetic of a micro-batch does not depend on the stage split or on which other
// micro-batches are in flight, and each gradient accumulates over micro-batches in Backward
// order, so any split of the slots and any interleaving with the same Backward order gives the
// same bits as the one-stage model.
//
// Errors (InvalidArgument naming the field and value unless noted): Create: the config
// (ValidateSmallGptConfig), rank outside [0, tp), a slot range outside 0 <= begin < end <= L + 2.
// Forward: the batch (ValidateGptBatch), operators of another rank or degree, an activation
// span of the wrong size (empty where the stage has no such side), a key already in flight
// (FailedPrecondition). Backward: a key not in flight (NotFound), a span of the wrong size, a
// non-finite loss_scale. Operator errors pass through; the micro-batch's activations are then
// dropped and the gradients are unspecified.
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/gpt_dropout.h"
#include "models/small_dit.h"
#include "models/small_gpt_config.h"
#include "models/tp_ops.h"

namespace tessera::models {

class SmallGptStage {
 public:
  // The number of layer slots of a config: num_layers + 2.
  static int64_t NumSlots(const SmallGptConfig& c) { return c.num_layers + 2; }

  static core::StatusOr<SmallGptStage> Create(const SmallGptConfig& config, int tp, int rank,
                                              int64_t slot_begin, int64_t slot_end);

  const SmallGptConfig& config() const { return config_; }
  int tp() const { return tp_; }
  int rank() const { return rank_; }
  int64_t slot_begin() const { return slot_begin_; }
  int64_t slot_end() const { return slot_end_; }
  bool is_first() const { return slot_begin_ == 0; }
  bool is_last() const { return slot_end_ == NumSlots(config_); }
  // Elements of an activation between stages for a micro-batch of `num_tokens` tokens:
  // num_tokens / tp x hidden.
  int64_t ActivationSize(int64_t num_tokens) const { return num_tokens / tp_ * config_.hidden; }

  [[nodiscard]] core::StatusOr<double> Forward(MicroBatchKey key, const GptBatch& micro_batch,
                                               std::span<const float> input_act,
                                               std::span<float> output_act, TensorParallelOps& ops);
  [[nodiscard]] core::Status Backward(MicroBatchKey key, std::span<const float> grad_output,
                                      std::span<float> grad_input, float loss_scale,
                                      TensorParallelOps& ops);

  // Starts a step: every gradient 0.
  void ZeroGradients();
  // Sums the gradients of the replicated tensors (embeddings, head) over the TP ranks (one
  // AllReduceSum; nothing when the stage owns none). Once per step, after the last Backward.
  [[nodiscard]] core::Status ReduceReplicatedGradients(TensorParallelOps& ops);
  // Micro-batches forwarded and not yet backwarded.
  int64_t NumInFlight() const { return static_cast<int64_t>(in_flight_.size()); }
  // Forgets every micro-batch in flight (after a failure).
  void DiscardInFlight();

  std::span<float> Parameters() { return params_; }
  std::span<const float> Parameters() const { return params_; }
  std::span<const float> Gradients() const { return grads_; }
  int64_t NumParameters() const { return static_cast<int64_t>(params_.size()); }
  // The replicated prefix (embeddings and head): its gradients are summed over ranks.
  int64_t NumReplicatedParameters() const { return replicated_; }
  const std::vector<ParameterTensor>& ParameterTensors() const { return tensors_; }
  // One owned slot's parameters / gradients (contiguous); InvalidArgument for a slot outside
  // [slot_begin, slot_end).
  core::StatusOr<std::span<float>> SlotParameters(int64_t slot);
  core::StatusOr<std::span<const float>> SlotGradients(int64_t slot) const;

 private:
  SmallGptStage(const SmallGptConfig& config, int tp, int rank, int64_t slot_begin,
                int64_t slot_end);

  struct BlockOffsets {
    int64_t w_qkv, w_proj, w_fc1, w_fc2;
  };
  struct BlockActs {
    std::vector<float> a, rstd1, q, k, v, o, lse, b, rstd2, f, g;
  };
  // What Backward needs of one micro-batch.
  struct MicroBatchActs {
    int64_t batch = 0, seq = 0;
    std::vector<int32_t> tokens, targets;  // this rank's rows (first stage / last stage)
    std::vector<BlockActs> blocks;         // the owned blocks, in order
    std::vector<float> z, rstdf, probs;    // last stage: final LN output, its rstd, softmax
  };
  // The sizes of one micro-batch on this rank.
  struct Dims {
    int64_t m, mr, row0, h, hl, fl, heads, v;
  };
  struct SlotRange {
    int64_t offset = 0, size = 0;
  };

  Dims DimsOf(int64_t batch, int64_t seq) const;
  int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }
  // Global layer of the stage's block i.
  int64_t LayerOf(int64_t i) const { return first_layer_ + i; }
  core::StatusOr<SlotRange> SlotRangeOf(int64_t slot) const;

  core::StatusOr<double> RunForward(MicroBatchKey key, const GptBatch& batch,
                                    std::span<const float> input_act, std::span<float> output_act,
                                    TensorParallelOps& ops, MicroBatchActs& acts);
  core::Status RunBackward(MicroBatchKey key, std::span<const float> grad_output,
                           std::span<float> grad_input, float loss_scale, TensorParallelOps& ops,
                           MicroBatchActs& acts);
  core::Status BlockForward(int64_t i, MicroBatchKey key, const Dims& d, const MicroBatchActs& mb,
                            BlockActs& la, TensorParallelOps& ops);
  core::Status BlockBackward(int64_t i, MicroBatchKey key, const Dims& d, const MicroBatchActs& mb,
                             const BlockActs& la, TensorParallelOps& ops);

  SmallGptConfig config_;
  int tp_ = 1, rank_ = 0;
  int64_t slot_begin_ = 0, slot_end_ = 0, first_layer_ = 0;
  std::vector<ParameterTensor> tensors_;
  std::vector<SlotRange> slots_;  // per owned slot, slot_begin_ first
  // Offsets of the replicated tensors (-1 when not owned).
  int64_t tok_emb_ = -1, pos_emb_ = -1, w_head_ = -1, replicated_ = 0;
  std::vector<BlockOffsets> blocks_;
  std::vector<float> params_, grads_;
  std::map<MicroBatchKey, MicroBatchActs> in_flight_;
  std::vector<MicroBatchActs> pool_;  // freed records, reused for their allocations
  // Scratch of one Forward or Backward call.
  std::vector<float> x_, dx_, dres_, dtmp_, dwide_, dwide2_, dq_, dk_, dv_, dqkv_, qkv_, wt_, dw_;
};

}  // namespace tessera::models
