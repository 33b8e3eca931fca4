// SmallGpt: a small decoder-only transformer (GPT) in fp32 with a hand-written backward,
// trained with Megatron-style tensor parallelism and sequence parallelism over t ranks; every
// tensor-parallel GEMM goes through TensorParallelOps (tp_ops.h), so Compass's strategies run
// it. With t = 1 and LocalTpOps it is its own single-process twin.
//
// Model (hidden h, heads H of D = h / H, FFN f, vocabulary V, L layers, no biases, LayerNorm
// without affine parameters):
//   x    = tok_emb[token] + pos_emb[position]                       (tokens, h)
//   per layer:  a = LN(x);  [q k v] = a W_qkv;  o = CausalAttention(q, k, v);  x += o W_proj
//               b = LN(x);  x += GELU(b W_fc1) W_fc2
//   logits = LN(x) W_head;  loss = mean over tokens of -log softmax(logits)[target]
// Attention is causal within each sequence of the batch (kernels/attention.h, shape.causal).
//
// Tensor parallelism (rank r of t; M tokens in the batch; hl = h / t, fl = f / t): the
// residual stream, LayerNorms, embeddings and the head work on the rank's M / t token rows
// (sequence parallelism); W_qkv (h, 3 hl) holds the q, k and v columns of heads
// [r H / t, (r+1) H / t); W_proj (hl, h) the matching rows; W_fc1 (h, fl) columns and W_fc2
// (fl, h) rows [r fl, (r+1) fl). Per layer and step the TP operators are those of
// tp_layer_ops.h (one ungated MLP, as many KV heads as heads):
//   forward   qkv, fc1 (AllGatherGemm);  proj, fc2 (GemmReduceScatter)
//   backward  proj-dgrad, fc2-dgrad (AllGatherGemm of dY with W^T);  qkv-dgrad, fc1-dgrad
//             (GemmReduceScatter with W^T);  qkv-wgrad, fc1-wgrad (AllGatherWgrad of the LN
//             output);  proj-wgrad, fc2-wgrad (AllGatherWgrad of dY, giving dW^T: Megatron
//             reuses the dY its dgrad gathered (the table's reuses_dgrad_gather); here each
//             operator gathers its own, so the strategies can overlap it)
// and the gradients of the replicated weights (embeddings, head) are summed over ranks with
// one AllReduceSum, the loss with another.
//
// Weights are initialised for the WHOLE model from init_seed (the same values for every t)
// and each rank keeps its slices, so a run at any t starts from the same model as t = 1.
// Parameters and gradients live in one flat buffer per rank: the replicated weights first
// (tok_emb, pos_emb, w_head), then each layer's w_qkv, w_proj, w_fc1, w_fc2 slices.
// SmallGpt is the pipeline stage that owns every layer slot (small_gpt_stage.h) run on the whole
// batch as one micro-batch with loss scale 1 / M; its config, presets and batches are in
// small_gpt_config.h. With dropout (config.dropout > 0) the masks of a call are keyed by
// MicroBatchKey{step(), 0}: ForwardBackward repeats its masks until a TrainStep advances step().
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/status.h"
#include "models/adamw.h"
#include "models/small_dit.h"
#include "models/small_gpt_config.h"
#include "models/small_gpt_stage.h"
#include "models/tp_layer_ops.h"
#include "models/tp_ops.h"

namespace tessera::models {

class SmallGpt {
 public:
  // Rank `rank` of `tp`. Validates the config (ValidateSmallGptConfig).
  static core::StatusOr<SmallGpt> Create(const SmallGptConfig& config, int tp, int rank);

  const SmallGptConfig& config() const { return stage_.config(); }
  int tp() const { return stage_.tp(); }
  int rank() const { return stage_.rank(); }
  // TrainSteps done (the step of the dropout masks).
  int64_t step() const { return step_; }

  // One training step on `batch` (the whole batch; the rank uses its rows): forward, backward
  // and an AdamW update of this rank's parameters. Returns the mean loss over ALL M tokens
  // (every rank returns the same value). InvalidArgument when batch.seq > max_seq, a token
  // is outside [0, V) or M is not divisible by tp; ops.tp() must equal tp(). Errors of the
  // operators pass through (the parameters are then unspecified).
  core::StatusOr<double> TrainStep(const GptBatch& batch, TensorParallelOps& ops, AdamW& opt);

  // Forward and backward only: fills Gradients() (zeroed first) and returns the loss.
  core::StatusOr<double> ForwardBackward(const GptBatch& batch, TensorParallelOps& ops);

  std::span<float> Parameters() { return stage_.Parameters(); }
  std::span<const float> Parameters() const { return stage_.Parameters(); }
  std::span<const float> Gradients() const { return stage_.Gradients(); }
  int64_t NumParameters() const { return stage_.NumParameters(); }
  // The replicated prefix (embeddings and head): its gradients are summed over ranks.
  int64_t NumReplicatedParameters() const { return stage_.NumReplicatedParameters(); }
  const std::vector<ParameterTensor>& ParameterTensors() const { return stage_.ParameterTensors(); }

  // This rank's TP operators, in call order, for one step on M tokens (tp_layer_ops.h's
  // table for this model): one layer's worth; every layer repeats them.
  std::vector<TpLayerOp> LayerTpCalls(int64_t num_tokens) const;

 private:
  explicit SmallGpt(SmallGptStage stage) : stage_(std::move(stage)) {}

  SmallGptStage stage_;
  int64_t step_ = 0;
};

}  // namespace tessera::models
