// AttentionShape: the geometry of one packed, variable-length (varlen) attention call, shared by
// the tiled kernels (attention.h), the reference (attention_reference.h) and their callers.
//
// Layout conventions (all fp32, row-major, contiguous, no padding between tokens):
//   Q, O, dQ, dO : (Tq_total, H, D)   element [t, h, d] at (t * H + h) * D + d
//   K, V, dK, dV : (Tk_total, H, D)
//   LSE          : (Tq_total, H)      element [t, h] at t * H + h; natural log
// Tq_total = cu_seqlens_q.back(), Tk_total = cu_seqlens_k.back().
//
// Sequences: cu_seqlens_q and cu_seqlens_k both hold nseq + 1 cumulative token offsets starting
// at 0. Sequence i owns query tokens [cu_seqlens_q[i], cu_seqlens_q[i+1]) and key/value tokens
// [cu_seqlens_k[i], cu_seqlens_k[i+1]); its queries attend only to its own keys: the attention
// matrix is block diagonal. Per-sequence query and key lengths may differ (ring attention runs a
// query chunk against another rank's key chunk) and may be 0. A query row with no keys has
// O = 0 and LSE = -inf.
//
// Masking: with causal = false (the default; a bidirectional DiT) every query of a sequence sees
// all of that sequence's keys. With causal = true (a decoder such as GPT) query row i of a
// sequence (0-based within it) sees key j iff j <= i + (lk - lq), where lq and lk are that
// sequence's query and key lengths: the mask is aligned to the bottom-right corner, so for
// lq == lk row i sees keys 0..i, and for lq < lk the queries are the LAST lq positions of an lk
// token sequence (e.g. new tokens after a cache of lk - lq keys). Causal requires lq <= lk per
// sequence, so every query row sees at least key 0.
//
// The spans are non-owning views: the caller keeps the offset arrays alive for the call.
// AttentionShape is a plain value; thread-compatible.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>

#include "core/status.h"

namespace tessera::kernels {

struct AttentionShape {
  int64_t num_heads = 0;                  // H >= 1
  int64_t head_dim = 0;                   // D >= 1 (the tiled kernels are tuned for 64 and 128)
  std::span<const int64_t> cu_seqlens_q;  // nseq + 1 offsets into the query tokens
  std::span<const int64_t> cu_seqlens_k;  // nseq + 1 offsets into the key/value tokens
  std::optional<float> scale;             // softmax scale; unset means 1 / sqrt(head_dim)
  bool causal = false;                    // bottom-right aligned causal mask (see above)

  int64_t num_seqs() const {
    return cu_seqlens_q.empty() ? 0 : static_cast<int64_t>(cu_seqlens_q.size()) - 1;
  }
  int64_t total_q() const { return cu_seqlens_q.empty() ? 0 : cu_seqlens_q.back(); }
  int64_t total_k() const { return cu_seqlens_k.empty() ? 0 : cu_seqlens_k.back(); }
  int64_t seqlen_q(int64_t i) const { return cu_seqlens_q[i + 1] - cu_seqlens_q[i]; }
  int64_t seqlen_k(int64_t i) const { return cu_seqlens_k[i + 1] - cu_seqlens_k[i]; }
  float EffectiveScale() const {
    return scale.has_value() ? *scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
  }
};

// Returns InvalidArgument naming the field when: num_heads or head_dim < 1 or H * D exceeds
// INT32_MAX; a cu_seqlens array is empty or the two differ in size; an offset array does not
// start at 0 or decreases; the scale is set and not finite; or causal is set and some sequence
// has more queries than keys (the message names the sequence and both lengths).
[[nodiscard]] core::Status ValidateAttentionShape(const AttentionShape& shape);

// Returns InvalidArgument naming `name` when `ptr` is null but the tensor has elements.
[[nodiscard]] core::Status CheckTensorPointer(const char* name, const void* ptr,
                                              int64_t num_elements);

}  // namespace tessera::kernels
