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
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/adamw.h"
#include "models/small_dit.h"
#include "models/tp_layer_ops.h"
#include "models/tp_ops.h"

namespace tessera::models {

struct SmallGptConfig {
  int64_t vocab = 1024;
  int64_t hidden = 256;
  int64_t num_heads = 8;
  int64_t num_layers = 4;
  int64_t ffn_hidden = 1024;
  int64_t max_seq = 256;  // positions with an embedding
  float layer_norm_eps = 1e-5f;
  uint64_t init_seed = 1;
  int64_t head_dim() const { return num_heads > 0 ? hidden / num_heads : 0; }
};

// "gpt-small": the config above (V 1024, h 256, 8 heads, 4 layers, f 1024, 256 positions);
// "gpt-medium": V 2048, h 1024, 16 heads, 2 layers, f 4096, 512 positions (GEMMs large enough
// that a TP collective and its GEMM take comparable time on the paper's GPUs);
// "gpt-tiny": V 128, h 64, 4 heads, 2 layers, f 256, 64 positions (tests). NotFound naming the
// allowed names otherwise.
core::StatusOr<SmallGptConfig> SmallGptPreset(const std::string& name);

// InvalidArgument naming the field: sizes >= 1 (vocab, hidden <= 2^16, ffn <= 2^18, layers
// <= 2^10, max_seq <= 2^16), heads dividing hidden, tp in [1, 64] dividing heads and ffn,
// eps positive and finite.
[[nodiscard]] core::Status ValidateSmallGptConfig(const SmallGptConfig& c, int tp);

// A batch of `batch` sequences of `seq` tokens each (M = batch x seq), packed row-major.
struct GptBatch {
  int64_t batch = 0, seq = 0;
  std::vector<int32_t> tokens;   // (M)
  std::vector<int32_t> targets;  // (M) the next token of each position
  int64_t num_tokens() const { return batch * seq; }
};

// Seeded synthetic text with structure to learn: each sequence starts at a random token and
// continues with next = (5 prev + 3 + e) mod V, e = 0 with probability 3/4 and else a random
// token offset. Different (seed, step) give different batches. InvalidArgument for sizes < 1
// or vocab < 2.
core::StatusOr<GptBatch> MakeSyntheticGptBatch(int64_t vocab, int64_t batch, int64_t seq,
                                               uint64_t seed, int64_t step);

class SmallGpt {
 public:
  // Rank `rank` of `tp`. Validates the config (ValidateSmallGptConfig).
  static core::StatusOr<SmallGpt> Create(const SmallGptConfig& config, int tp, int rank);

  const SmallGptConfig& config() const { return config_; }
  int tp() const { return tp_; }
  int rank() const { return rank_; }

  // One training step on `batch` (the whole batch; the rank uses its rows): forward, backward
  // and an AdamW update of this rank's parameters. Returns the mean loss over ALL M tokens
  // (every rank returns the same value). InvalidArgument when batch.seq > max_seq, a token
  // is outside [0, V) or M is not divisible by tp; ops.tp() must equal tp(). Errors of the
  // operators pass through (the parameters are then unspecified).
  core::StatusOr<double> TrainStep(const GptBatch& batch, TensorParallelOps& ops, AdamW& opt);

  // Forward and backward only: fills Gradients() (zeroed first) and returns the loss.
  core::StatusOr<double> ForwardBackward(const GptBatch& batch, TensorParallelOps& ops);

  std::span<float> Parameters() { return params_; }
  std::span<const float> Parameters() const { return params_; }
  std::span<const float> Gradients() const { return grads_; }
  int64_t NumParameters() const { return static_cast<int64_t>(params_.size()); }
  // The replicated prefix (embeddings and head): its gradients are summed over ranks.
  int64_t NumReplicatedParameters() const { return replicated_; }
  const std::vector<ParameterTensor>& ParameterTensors() const { return tensors_; }

  // This rank's TP operators, in call order, for one step on M tokens (tp_layer_ops.h's
  // table for this model): one layer's worth; every layer repeats them.
  std::vector<TpLayerOp> LayerTpCalls(int64_t num_tokens) const;

 private:
  SmallGpt(const SmallGptConfig& config, int tp, int rank);

  // The phases of ForwardBackward: the batch's rules, then the forward pass (the loss, every
  // rank's), then the backward pass (grads_).
  core::Status CheckBatch(const GptBatch& batch, const TensorParallelOps& ops) const;
  core::StatusOr<double> Forward(const GptBatch& batch, TensorParallelOps& ops);
  core::Status Backward(const GptBatch& batch, TensorParallelOps& ops);

  struct LayerOffsets {
    int64_t w_qkv, w_proj, w_fc1, w_fc2;
  };
  struct LayerActs {
    std::vector<float> a, rstd1, q, k, v, o, lse, b, rstd2, f, g;
  };

  SmallGptConfig config_;
  int tp_ = 1, rank_ = 0;
  std::vector<ParameterTensor> tensors_;
  int64_t tok_emb_ = 0, pos_emb_ = 0, w_head_ = 0, replicated_ = 0;
  std::vector<LayerOffsets> layers_;
  std::vector<float> params_, grads_;
  // Activations and scratch, kept between steps.
  std::vector<LayerActs> acts_;
  std::vector<float> x_, z_, rstdf_, probs_, dx_, dtmp_, dwide_, dwide2_, dq_, dk_, dv_, dqkv_,
      qkv_, wt_, dw_;
};

}  // namespace tessera::models
