#include "models/kv_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "kernels/decode_attention.h"

namespace tessera::models {

LocalKvCache::LocalKvCache(const LlamaConfig& config, int64_t capacity_tokens)
    : num_layers_(config.num_layers),
      num_heads_(config.num_heads),
      num_kv_heads_(config.num_kv_heads),
      head_dim_(config.head_dim),
      capacity_(capacity_tokens > 0 ? capacity_tokens : config.max_context),
      k_(config.num_layers),
      v_(config.num_layers) {
  CHECK(capacity_ >= 1) << "LocalKvCache: capacity " << capacity_;
  CHECK(num_layers_ >= 1 && num_heads_ >= 1 && num_kv_heads_ >= 1 && head_dim_ >= 1);
}

core::Status LocalKvCache::BeginLayer(int64_t layer, int64_t pos0, int64_t num_tokens,
                                      const float* q) {
  if (layer == 0) {  // a new call; one that failed part-way is abandoned
    next_layer_ = 0;
    pending_layer_ = -1;
  }
  if (layer != next_layer_ || pending_layer_ >= 0) {
    return core::FailedPrecondition(fmt::format(
        "LocalKvCache::BeginLayer: layer: got {}, expected {} (layers go 0..{} per call, each "
        "BeginLayer followed by its FinishLayer)",
        layer, next_layer_, num_layers_ - 1));
  }
  if (pos0 != num_tokens_ || num_tokens < 1) {
    return core::FailedPrecondition(fmt::format(
        "LocalKvCache::BeginLayer: got pos0 {} and {} tokens, must be pos0 {} (tokens stored) "
        "and >= 1 token",
        pos0, num_tokens, num_tokens_));
  }
  if (pos0 + num_tokens > capacity_) {
    return core::Infeasible(fmt::format("KV cache: got {} + {} tokens, capacity is {} tokens", pos0,
                                        num_tokens, capacity_));
  }
  CHECK(q != nullptr);
  const int64_t q_size = num_tokens * num_heads_ * head_dim_;
  q_.assign(q, q + q_size);
  pending_layer_ = layer;
  pending_pos0_ = pos0;
  pending_tokens_ = num_tokens;
  return core::Status::Ok();
}

core::Status LocalKvCache::FinishLayer(int64_t layer, const float* k, const float* v, float* o) {
  if (layer != pending_layer_) {
    return core::FailedPrecondition(
        fmt::format("LocalKvCache::FinishLayer: layer: got {}, expected {} (its BeginLayer)", layer,
                    pending_layer_));
  }
  CHECK(k != nullptr && v != nullptr && o != nullptr);
  const int64_t row = num_kv_heads_ * head_dim_;
  const int64_t end = pending_pos0_ + pending_tokens_;
  std::vector<float>& kc = k_[layer];
  std::vector<float>& vc = v_[layer];
  if (static_cast<int64_t>(kc.size()) < end * row) {
    const int64_t tokens =
        std::min(capacity_, std::max(end, 2 * static_cast<int64_t>(kc.size()) / row));
    kc.resize(tokens * row);
    vc.resize(tokens * row);
  }
  std::copy(k, k + pending_tokens_ * row, kc.begin() + pending_pos0_ * row);
  std::copy(v, v + pending_tokens_ * row, vc.begin() + pending_pos0_ * row);

  const kernels::KvSegment segment{
      .k = kc.data(), .v = vc.data(), .len = end, .token_stride = row, .head_stride = head_dim_};
  const kernels::DecodeAttentionShape shape{.num_q_tokens = pending_tokens_,
                                            .num_heads = num_heads_,
                                            .num_kv_heads = num_kv_heads_,
                                            .head_dim = head_dim_,
                                            .scale = std::nullopt,
                                            .causal = true};
  lse_.resize(pending_tokens_ * num_heads_);
  pending_layer_ = -1;
  next_layer_ = 0;  // on failure the next call starts over at layer 0
  RETURN_IF_ERROR(
      kernels::PartialAttention(shape, q_.data(), std::span(&segment, 1), o, lse_.data()));
  if (layer + 1 < num_layers_) {
    next_layer_ = layer + 1;
  } else {
    num_tokens_ = end;
  }
  return core::Status::Ok();
}

void LocalKvCache::Reset() {
  num_tokens_ = 0;
  pending_layer_ = -1;
  next_layer_ = 0;
}

core::Status LocalKvCache::Truncate(int64_t n) {
  if (n < 0 || n > num_tokens_) {
    return core::InvalidArgument(
        fmt::format("KV cache truncate: got {}, must be in [0, {}]", n, num_tokens_));
  }
  num_tokens_ = n;
  pending_layer_ = -1;
  next_layer_ = 0;
  return core::Status::Ok();
}

}  // namespace tessera::models
