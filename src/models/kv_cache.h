// LocalKvCache: the monolithic KV cache of one sequence, the CoreAttention (core_attention.h)
// that keeps every layer's keys and values in this process. It is the single-process twin that
// every disaggregated run is tested against.
//
// Storage: per layer, K and V of shape (capacity, Hkv, D), token-major (element [t, g, d] at
// (t * Hkv + g) * D + d), fp32; memory grows with the tokens stored (doubling, capped at the
// capacity), so a large capacity costs nothing up front.
// Per call: BeginLayer copies q (the caller's buffer is valid only during the call);
// FinishLayer writes k and v at positions [pos0, pos0 + T) of the layer, then computes o with
// kernels::PartialAttention (causal) over the one segment holding positions [0, pos0 + T).
// num_tokens() counts the positions every layer holds: it advances when the last layer of a
// call finishes, so a forward that fails part-way leaves it unchanged and the next call at the
// same pos0 rewrites the partial layers (BeginLayer of layer 0 always starts a new call).
// Errors: a layer out of order, pos0 != num_tokens(), T < 1 -> FailedPrecondition; more than
// capacity tokens -> Infeasible naming the capacity.
// Thread-safety: one thread at a time (one sequence).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "models/core_attention.h"
#include "models/llama_config.h"

namespace tessera::models {

class LocalKvCache : public CoreAttention {
 public:
  // A cache for a model of `config` holding at most `capacity_tokens` positions (>= 1; CHECK),
  // by default the model's max_context.
  explicit LocalKvCache(const LlamaConfig& config, int64_t capacity_tokens = 0);

  [[nodiscard]] core::Status BeginLayer(int64_t layer, int64_t pos0, int64_t num_tokens,
                                        const float* q) override;
  [[nodiscard]] core::Status FinishLayer(int64_t layer, const float* k, const float* v,
                                         float* o) override;

  // Positions stored by every layer.
  int64_t num_tokens() const { return num_tokens_; }
  int64_t capacity() const { return capacity_; }
  // Forgets every position (keeps the memory).
  void Reset();
  // Keeps positions [0, n); InvalidArgument unless 0 <= n <= num_tokens().
  [[nodiscard]] core::Status Truncate(int64_t n);
  // Layer `layer`'s keys and values of positions [0, num_tokens()) (token-major).
  const float* keys(int64_t layer) const { return k_[layer].data(); }
  const float* values(int64_t layer) const { return v_[layer].data(); }

 private:
  int64_t num_layers_ = 0;
  int64_t num_heads_ = 0;
  int64_t num_kv_heads_ = 0;
  int64_t head_dim_ = 0;
  int64_t capacity_ = 0;
  int64_t num_tokens_ = 0;
  std::vector<std::vector<float>> k_;  // per layer (allocated tokens, Hkv, D)
  std::vector<std::vector<float>> v_;
  // The call in flight: set by BeginLayer, cleared by FinishLayer.
  int64_t pending_layer_ = -1;
  int64_t pending_pos0_ = 0;
  int64_t pending_tokens_ = 0;
  int64_t next_layer_ = 0;  // the layer the next BeginLayer must name
  std::vector<float> q_;
  std::vector<float> lse_;
};

}  // namespace tessera::models
