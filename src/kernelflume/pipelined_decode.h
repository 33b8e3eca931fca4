// Inter-layer pipelining of a KernelFlume decode step: the requests of a step split into two
// micro-batches balanced by attention tokens, run ping-pong per layer so that while one
// micro-batch's queries are on the attention nodes, the weight node computes the other's
// projections and FFN.
//
// SplitByAttentionTokens(context_tokens) puts each request (its attention tokens: the context
// it attends) into micro-batch A or B, minimising the larger of the two token sums; both are
// non-empty when there are >= 2 requests. Ties go to the split with the smaller difference in
// request counts (the weight side's rows), then to the first found in a fixed order, so the
// result is deterministic. Exact (every split enumerated) up to kExactSplitMaxRequests
// requests; beyond, longest-first greedy to the lighter side followed by single moves and
// swaps while they lower the larger sum (a heuristic; greedy alone is within 7/6 of optimal).
//
// PipelinedDecode runs one decode step (one new token per request, models::LlamaBatchDecode)
// either as ONE micro-batch (Dispatch(l), Complete(l) for l = 0..L-1) or as TWO:
//   A.Dispatch(0), B.Dispatch(0),
//   A.Complete(0), A.Dispatch(1), B.Complete(0), B.Dispatch(1), ...,
//   A.Complete(L-1), A.Logits, B.Complete(L-1), B.Logits
// Dispatch sends a micro-batch's queries (query-first: BeginLayer) and computes its K and V;
// Complete waits for its partials, then runs Wo and the FFN. With remote attention this keeps
// one micro-batch's attention in flight while the weight node computes the other's layer; the
// step's time tends to max(t_w, t_a) from t_w + t_a, a speedup bounded by (t_w + t_a) /
// max(t_w, t_a) <= 2 (PipelineBound). Logits are the same either way (each row depends only on
// its own request), up to the GEMM's summation order for a different number of rows.
// Messages: given a SendBatch (send_batch.h) that the requests' DisaggregatedAttentions were
// given too (set_send_batch), a micro-batch's queries of a layer leave as one message per node
// (flushed between its BeginLayer calls and its K/V projections), with the appends of the
// layer before riding along; without one, each request's messages leave on their own.
// Thread-safety: one thread (the weight node's compute thread); the remote attention runs in
// the attention nodes. Borrows the model.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "kernelflume/send_batch.h"
#include "models/core_attention.h"
#include "models/llama.h"
#include "models/llama_batch_decode.h"

namespace tessera::kernelflume {

inline constexpr size_t kExactSplitMaxRequests = 20;

struct MicroBatchSplit {
  std::vector<int64_t> a, b;  // request indices, ascending
  int64_t tokens_a = 0, tokens_b = 0;
  int64_t larger() const { return tokens_a > tokens_b ? tokens_a : tokens_b; }
};

// InvalidArgument for a negative count (naming its index). Empty input: two empty batches.
core::StatusOr<MicroBatchSplit> SplitByAttentionTokens(std::span<const int64_t> context_tokens);

// (t_w + t_a) / max(t_w, t_a): the most two micro-batches can gain over one when the weight
// side takes t_w and the attention side t_a per step (both >= 0, not both 0; else 1).
double PipelineBound(double t_w_s, double t_a_s);

class PipelinedDecode {
 public:
  explicit PipelinedDecode(const models::LlamaModel& model, SendBatch* batch = nullptr)
      : model_(model), batch_(batch), a_(model), b_(model) {}

  // One step as one micro-batch: logits (B, V), row i for request i. Errors as
  // models::LlamaBatchDecode (bad input names the field) or of the CoreAttentions.
  [[nodiscard]] core::Status StepOne(std::span<const int32_t> tokens,
                                     std::span<const int64_t> positions,
                                     std::span<models::CoreAttention* const> attns, float* logits);
  // One step as two ping-ponged micro-batches `split` (a partition of [0, B) into two non-empty
  // sets, else InvalidArgument naming `split`); logits as StepOne.
  [[nodiscard]] core::Status StepTwo(std::span<const int32_t> tokens,
                                     std::span<const int64_t> positions,
                                     std::span<models::CoreAttention* const> attns,
                                     const MicroBatchSplit& split, float* logits);

 private:
  // DispatchQueries, the batch's flush, DispatchKeyValues.
  [[nodiscard]] core::Status Issue(models::LlamaBatchDecode& mb, int64_t layer);
  [[nodiscard]] core::Status FlushBatch();

  const models::LlamaModel& model_;
  SendBatch* batch_;
  models::LlamaBatchDecode a_, b_;
  std::vector<int32_t> tok_a_, tok_b_;
  std::vector<int64_t> pos_a_, pos_b_;
  std::vector<models::CoreAttention*> attn_a_, attn_b_;
  std::vector<float> logits_a_, logits_b_;
};

}  // namespace tessera::kernelflume
