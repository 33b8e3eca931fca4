#include "models/llama_batch_decode.h"

#include <fmt/format.h>

#include "models/llama_ops.h"

namespace tessera::models {

using core::Status;

Status LlamaBatchDecode::Start(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                               std::span<CoreAttention* const> attns) {
  started_ = false;
  const LlamaConfig& c = model_.config();
  if (tokens.empty()) {
    return core::InvalidArgument("tokens: got 0, must hold one new token per sequence (>= 1)");
  }
  if (positions.size() != tokens.size()) {
    return core::InvalidArgument(
        fmt::format("positions: got {} entries for {} tokens, must give one position per token",
                    positions.size(), tokens.size()));
  }
  if (attns.size() != tokens.size()) {
    return core::InvalidArgument(
        fmt::format("attns: got {} entries for {} tokens, must give one CoreAttention per token",
                    attns.size(), tokens.size()));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab) {
      return core::InvalidArgument(fmt::format("tokens[{}]: got {}, must be in [0, {}) ({})", i,
                                               tokens[i], c.vocab, c.name));
    }
    if (positions[i] < 0 || positions[i] >= c.max_context) {
      return core::InvalidArgument(
          fmt::format("positions[{}]: got {}, must be in [0, max_context {}) of {}", i,
                      positions[i], c.max_context, c.name));
    }
    if (attns[i] == nullptr) {
      return core::InvalidArgument(fmt::format("attns[{}]: null, must be a CoreAttention", i));
    }
  }
  const int64_t b = static_cast<int64_t>(tokens.size());
  const int64_t d = c.hidden, half = c.head_dim / 2, f = c.ffn_hidden;
  const int64_t qw = c.num_heads * c.head_dim, kvw = c.num_kv_heads * c.head_dim;
  const size_t need = static_cast<size_t>(b * (2 * d + 2 * qw + 2 * kvw + 2 * f + 2 * half));
  if (scratch_.size() < need) scratch_.resize(need);
  batch_ = b;
  x_ = scratch_.data();
  xn_ = x_ + b * d;
  q_ = xn_ + b * d;
  o_ = q_ + b * qw;
  k_ = o_ + b * qw;
  v_ = k_ + b * kvw;
  gate_ = v_ + b * kvw;
  up_ = gate_ + b * f;
  cos_ = up_ + b * f;
  sin_ = cos_ + b * half;
  positions_.assign(positions.begin(), positions.end());
  attns_.assign(attns.begin(), attns.end());
  RopeTables(positions_, c.RopeInvFreq(), cos_, sin_);
  const std::vector<float>& embed = model_.weights().embed;
  for (int64_t i = 0; i < b; ++i) {
    const float* row = embed.data() + static_cast<int64_t>(tokens[i]) * d;
    std::copy(row, row + d, x_ + i * d);
  }
  queried_ = dispatched_ = completed_ = -1;
  started_ = true;
  return Status::Ok();
}

Status LlamaBatchDecode::ExpectPhase(const char* call, int64_t layer, int64_t queried,
                                     int64_t dispatched, int64_t completed) const {
  if (!started_) {
    return core::FailedPrecondition(fmt::format(
        "LlamaBatchDecode::{}({}): no step in progress (call Start first)", call, layer));
  }
  if (queried_ != queried || dispatched_ != dispatched || completed_ != completed) {
    return core::FailedPrecondition(fmt::format(
        "LlamaBatchDecode::{}({}): out of order (layers queried up to {}, dispatched up to {}, "
        "completed up to {}; the order is Dispatch(l), Complete(l), Dispatch(l + 1), ...)",
        call, layer, queried_, dispatched_, completed_));
  }
  return Status::Ok();
}

Status LlamaBatchDecode::Dispatch(int64_t layer) {
  RETURN_IF_ERROR(DispatchQueries(layer));
  return DispatchKeyValues(layer);
}

Status LlamaBatchDecode::DispatchQueries(int64_t layer) {
  RETURN_IF_ERROR(ExpectPhase("DispatchQueries", layer, layer - 1, layer - 1, layer - 1));
  const LlamaConfig& c = model_.config();
  if (layer >= c.num_layers) {
    return core::FailedPrecondition(fmt::format(
        "LlamaBatchDecode::DispatchQueries({}): the model has {} layers", layer, c.num_layers));
  }
  started_ = false;  // until this call succeeds
  const LlamaLayerWeights& w = model_.weights().layers[layer];
  const int64_t b = batch_, d = c.hidden, hd = c.head_dim, qw = c.num_heads * hd;
  RmsNormRows(x_, b, d, w.attn_norm.data(), c.rms_eps, xn_);
  RETURN_IF_ERROR(LlamaLinear(xn_, b, d, w.wq, qw, 0.0f, q_));
  ApplyRope(q_, b, c.num_heads, hd, cos_, sin_);
  for (int64_t i = 0; i < b; ++i) {
    RETURN_IF_ERROR(attns_[i]->BeginLayer(layer, positions_[i], 1, q_ + i * qw));
  }
  queried_ = layer;
  started_ = true;
  return Status::Ok();
}

Status LlamaBatchDecode::DispatchKeyValues(int64_t layer) {
  RETURN_IF_ERROR(ExpectPhase("DispatchKeyValues", layer, layer, layer - 1, layer - 1));
  started_ = false;  // until this call succeeds
  const LlamaConfig& c = model_.config();
  const LlamaLayerWeights& w = model_.weights().layers[layer];
  const int64_t b = batch_, d = c.hidden, hd = c.head_dim, kvw = c.num_kv_heads * hd;
  RETURN_IF_ERROR(LlamaLinear(xn_, b, d, w.wk, kvw, 0.0f, k_));
  ApplyRope(k_, b, c.num_kv_heads, hd, cos_, sin_);
  RETURN_IF_ERROR(LlamaLinear(xn_, b, d, w.wv, kvw, 0.0f, v_));
  dispatched_ = layer;
  started_ = true;
  return Status::Ok();
}

Status LlamaBatchDecode::Complete(int64_t layer) {
  RETURN_IF_ERROR(ExpectPhase("Complete", layer, layer, layer, layer - 1));
  started_ = false;  // until this call succeeds
  const LlamaConfig& c = model_.config();
  const LlamaLayerWeights& w = model_.weights().layers[layer];
  const int64_t b = batch_, d = c.hidden, f = c.ffn_hidden;
  const int64_t qw = c.num_heads * c.head_dim, kvw = c.num_kv_heads * c.head_dim;
  for (int64_t i = 0; i < b; ++i) {
    RETURN_IF_ERROR(attns_[i]->FinishLayer(layer, k_ + i * kvw, v_ + i * kvw, o_ + i * qw));
  }
  RETURN_IF_ERROR(LlamaLinear(o_, b, qw, w.wo, d, 1.0f, x_));
  RmsNormRows(x_, b, d, w.ffn_norm.data(), c.rms_eps, xn_);
  RETURN_IF_ERROR(LlamaLinear(xn_, b, d, w.w_gate, f, 0.0f, gate_));
  RETURN_IF_ERROR(LlamaLinear(xn_, b, d, w.w_up, f, 0.0f, up_));
  SwiGluInPlace(gate_, up_, b * f);
  RETURN_IF_ERROR(LlamaLinear(gate_, b, f, w.w_down, d, 1.0f, x_));
  completed_ = layer;
  started_ = true;
  return Status::Ok();
}

Status LlamaBatchDecode::Logits(float* logits) {
  const LlamaConfig& c = model_.config();
  const int64_t last = c.num_layers - 1;
  RETURN_IF_ERROR(ExpectPhase("Logits", c.num_layers, last, last, last));
  started_ = false;  // the step is over
  const LlamaWeights& w = model_.weights();
  RmsNormRows(x_, batch_, c.hidden, w.final_norm.data(), c.rms_eps, xn_);
  const std::vector<float>& head = c.tie_embeddings ? w.embed : w.lm_head;
  return LlamaLinear(xn_, batch_, c.hidden, head, c.vocab, 0.0f, logits);
}

Status LlamaBatchDecode::Step(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                              std::span<CoreAttention* const> attns, float* logits) {
  RETURN_IF_ERROR(Start(tokens, positions, attns));
  for (int64_t l = 0; l < num_layers(); ++l) {
    RETURN_IF_ERROR(Dispatch(l));
    RETURN_IF_ERROR(Complete(l));
  }
  return Logits(logits);
}

}  // namespace tessera::models
