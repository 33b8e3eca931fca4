// CoreAttention: the part of a decoder layer that touches the KV cache, behind an interface, so
// that the same Llama forward (llama.h) runs with its cache in this process (LocalKvCache,
// kv_cache.h) or with the cache spread over attention-node processes (KernelFlume).
//
// Per layer and per forward call of one sequence, the model calls, in this order:
//   BeginLayer(layer, pos0, T, q)      q (T, H, D): the queries of the T new tokens at positions
//                                      [pos0, pos0 + T), after RoPE. An implementation may start
//                                      remote work here (query-first dispatch) before the model
//                                      computes K and V.
//   FinishLayer(layer, k, v, o)        k, v (T, Hkv, D): the new tokens' keys (after RoPE) and
//                                      values. Writes o (T, H, D): for new token i, attention of
//                                      its query over the keys at positions [0, pos0 + i], i.e.
//                                      the stored history plus the new tokens causally. Stores k
//                                      and v so that later calls see positions [0, pos0 + T).
// Layers go 0, 1, ..., L-1 within a call; pos0 of a call equals the number of positions stored
// by earlier calls (a call never rewrites history). H, Hkv, D are those of the model's config;
// query head h uses KV head h / (H / Hkv). All tensors are fp32, row-major, contiguous, owned by
// the caller and valid only during the call.
// Errors: a failure (a remote node died, capacity exhausted, non-finite partial) is returned as a
// Status; the model stops the forward and returns it.
// Thread-safety: one sequence's calls come from one thread at a time.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace tessera::models {

class CoreAttention {
 public:
  virtual ~CoreAttention() = default;
  [[nodiscard]] virtual core::Status BeginLayer(int64_t layer, int64_t pos0, int64_t num_tokens,
                                                const float* q) = 0;
  [[nodiscard]] virtual core::Status FinishLayer(int64_t layer, const float* k, const float* v,
                                                 float* o) = 0;
};

}  // namespace tessera::models
