// LlamaBatchDecode: one decode step of a LlamaModel for B sequences at once, one new token
// each, each sequence at its own position with its own CoreAttention (core_attention.h), driven
// layer by layer so that a scheduler can interleave two batches (KernelFlume's ping-pong of
// micro-batches, kernelflume/pipelined_decode.h).
//
// Every weight GEMM (Q/K/V/O projections, FFN, LM head) runs ONCE over the B rows (x is (B, d));
// core attention runs per sequence through its CoreAttention. Per step:
//   Start(tokens, positions, attns)   x = embed[tokens]; RoPE tables of each row's position
//   per layer l = 0 .. L-1:
//     Dispatch(l)   = DispatchQueries(l) then DispatchKeyValues(l):
//       DispatchQueries(l)    a = RMSNorm(x) * attn_norm; q = a Wq^T, RoPE; attns[i]->
//                             BeginLayer(l, positions[i], 1, q_i) for each i (a remote
//                             attention may start here; a caller that batches the queries'
//                             messages sends them between the two halves)
//       DispatchKeyValues(l)  k = a Wk^T, RoPE; v = a Wv^T
//     Complete(l)   attns[i]->FinishLayer(l, k_i, v_i, o_i) for each i (waits for remote
//                   partials); x += o Wo^T; b = RMSNorm(x) * ffn_norm;
//                   x += (silu(b Wg^T) * (b Wu^T)) Wd^T
//   Logits(out)    out (B, V) = (RMSNorm(x) * final_norm) W_head^T
// The arithmetic is llama.cc's (models/llama_ops.h), so sequence i's logits equal
// LlamaModel::Forward of the same token at the same position over the same cache (up to the
// GEMM's summation order for B rows instead of 1).
// Order: Start, then Dispatch(0), Complete(0), Dispatch(1), ..., Complete(L-1), Logits (each
// Dispatch possibly as its two halves); a call
// out of order is FailedPrecondition naming what was expected. After any error the step is
// over: call Start again (the caches may hold part of a step; see kv_cache.h for LocalKvCache's
// rule). Bad input to Start is InvalidArgument naming the field: tokens (empty, outside [0,
// V)), positions (count differs from tokens, outside [0, max_context)), attns (count differs,
// null).
// Ownership: borrows the model and, for one step, the CoreAttentions (which must outlive it).
// Scratch is kept between steps (grown, not shrunk). Thread-safety: one thread at a time; two
// LlamaBatchDecode objects on one model may run on different threads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "models/core_attention.h"
#include "models/llama.h"

namespace tessera::models {

class LlamaBatchDecode {
 public:
  explicit LlamaBatchDecode(const LlamaModel& model) : model_(model) {}

  [[nodiscard]] core::Status Start(std::span<const int32_t> tokens,
                                   std::span<const int64_t> positions,
                                   std::span<CoreAttention* const> attns);
  [[nodiscard]] core::Status Dispatch(int64_t layer);
  [[nodiscard]] core::Status DispatchQueries(int64_t layer);
  [[nodiscard]] core::Status DispatchKeyValues(int64_t layer);
  [[nodiscard]] core::Status Complete(int64_t layer);
  // Writes (B, V) logits, row i for sequence i.
  [[nodiscard]] core::Status Logits(float* logits);

  // The whole step in order: Start, Dispatch/Complete per layer, Logits.
  [[nodiscard]] core::Status Step(std::span<const int32_t> tokens,
                                  std::span<const int64_t> positions,
                                  std::span<CoreAttention* const> attns, float* logits);

  int64_t batch() const { return batch_; }
  int64_t num_layers() const { return model_.config().num_layers; }

 private:
  // Checks that the last layers queried, dispatched and completed are the given ones.
  [[nodiscard]] core::Status ExpectPhase(const char* call, int64_t layer, int64_t queried,
                                         int64_t dispatched, int64_t completed) const;

  const LlamaModel& model_;
  int64_t batch_ = 0;
  bool started_ = false;
  int64_t queried_ = -1;     // last layer whose queries were issued in this step
  int64_t dispatched_ = -1;  // last layer dispatched (queries, K and V) in this step
  int64_t completed_ = -1;   // last layer completed in this step
  std::vector<int64_t> positions_;
  std::vector<CoreAttention*> attns_;
  // Scratch (B rows each): x, xn (d); q, o (H*D); k, v (Hkv*D); gate, up (F); cos, sin (D/2).
  std::vector<float> scratch_;
  float *x_ = nullptr, *xn_ = nullptr, *q_ = nullptr, *o_ = nullptr, *k_ = nullptr;
  float *v_ = nullptr, *gate_ = nullptr, *up_ = nullptr, *cos_ = nullptr, *sin_ = nullptr;
};

}  // namespace tessera::models
