// Partial attention of a few query tokens over a KV cache held as a list of segments (pages or
// chunks): the decode-time kernel of a disaggregated attention node. The result is a partial
// (o, lse) pair, so results over disjoint key sets combine with MergeAttentionPartials
// (lse_merge.h).
//
// Shapes and units (all fp32):
//   q, o : (Tq, H, D) row-major contiguous, element [t, h, d] at (t * H + h) * D + d
//   lse  : (Tq, H), natural log
//   K, V : per segment, element [t, g, d] at t * token_stride + g * head_stride + d (elements)
// Query head h uses KV head h / (H / Hkv) (grouped-query attention; MHA when H == Hkv).
//
// Ownership: the caller owns every buffer; nothing is retained after the call. Outputs must not
// alias inputs. Thread-safety: reentrant (each call allocates its own scratch once, never inside
// the loops); concurrent calls on distinct outputs are safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "core/status.h"

namespace tessera::kernels {

// One contiguous run of cached keys and values. Element [t, g, d] (token t < len, KV head g,
// dim d) of K is k[t * token_stride + g * head_stride + d]; V likewise with the same strides.
// Both layouts are common: token-major (token_stride = Hkv*D, head_stride = D) and head-major
// pages (head_stride = page_tokens*D, token_stride = D).
struct KvSegment {
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t len = 0;           // tokens, >= 0
  int64_t token_stride = 0;  // elements between consecutive tokens of one head
  int64_t head_stride = 0;   // elements between consecutive KV heads
};

struct DecodeAttentionShape {
  int64_t num_q_tokens = 0;    // Tq >= 1
  int64_t num_heads = 0;       // H >= 1
  int64_t num_kv_heads = 0;    // Hkv >= 1, H % Hkv == 0; query head h uses KV head h / (H / Hkv)
  int64_t head_dim = 0;        // D >= 1
  std::optional<float> scale;  // unset: 1 / sqrt(D)
  // false: every query sees every key of every segment (history held elsewhere precedes all
  // queries). true: the keys (concatenation of the segments, total Tk) end with the queries'
  // own positions: query row i sees key j iff j <= i + (Tk - Tq) (bottom-right aligned, like
  // attention_shape.h); requires Tk >= Tq.
  bool causal = false;
};

// Partial attention of q (Tq, H, D) over the keys/values of `segments` in order, writing
// o (Tq, H, D) and lse (Tq, H). With no keys at all (empty list or all len 0, non-causal)
// o = 0 and lse = -inf, the identity of MergeAttentionPartials.
// The G = H / Hkv query heads sharing a KV head are processed together against that head's
// keys (rows = Tq * G), with an online softmax: for few rows (decode) and D % 8 == 0 a
// streaming kernel over blocks of 64 keys (decode_attention_stream.h); otherwise key tiles of
// at most 256 tokens through vectorised loops (few rows) or GemmUnchecked (gemm.h, many rows).
// Each key is visited once for all KV heads, so K and V are read from memory once per call.
// InvalidArgument naming the field on: Tq, H, Hkv or D < 1; H % Hkv != 0; a non-finite scale;
// null q, o or lse; a segment with len < 0, null k or v while len > 0, token_stride or
// head_stride < 1, or strides under which two (token, head) rows of D elements overlap;
// causal with Tk < Tq; o or lse overlapping q, each other or a segment's K/V.
[[nodiscard]] core::Status PartialAttention(const DecodeAttentionShape& shape, const float* q,
                                            std::span<const KvSegment> segments, float* o,
                                            float* lse);

// Plain reference with the same contract and validation: direct loops, double accumulation,
// one query row at a time. The test oracle of PartialAttention; use on small problems.
[[nodiscard]] core::Status PartialAttentionReference(const DecodeAttentionShape& shape,
                                                     const float* q,
                                                     std::span<const KvSegment> segments, float* o,
                                                     float* lse);

}  // namespace tessera::kernels
