// The streaming decode kernel of PartialAttention (decode_attention.cc) for few query rows per KV
// head (decode: rows = Tq * G, typically 1-8): one pass over a segment's keys and values in
// blocks of kStreamBlockTokens tokens, with an online softmax per block.
//
// Memory order: every K and V element of the segment is loaded from memory once, in address
// order. Per block, the score pass walks the tokens in order and loads each token's K row once
// for all query rows of its KV head (token-major: each token row once for a group of KV heads,
// up to kStreamMaxHeadRows query rows together); the value pass walks the tokens in order and
// loads each V row once into output accumulators held in registers (head-major: over the whole
// block; token-major: over windows of 8 tokens). Where one row group's accumulators of all d do
// not fit the registers (more rows, larger d, AVX2), and for the other KV heads of a token-major
// window, the further column chunks and heads re-read the rows from L1/L2, not from memory.
// Software prefetch requests K and V rows about 8 KB ahead of the ones consumed into L2, in address
// order (token-major: whole rows of every KV head), running into the next block and, when `next` is
// given, into the first block of the next segment.
//
// Layouts (fp32): qs (scaled queries) and acc (unnormalised outputs) are [kv][rows][d]
// contiguous; row_max and row_sum are [kv][rows]. Element [t, g, x] of the segment's K is
// seg.k[t * token_stride + g * head_stride + x] (V likewise). Rows of one KV head see the first
// visible[r] tokens of the segment (all seg.len when visible is null); the rest get weight 0.
// Requirements (checked by the caller, not here): d % 8 == 0, 1 <= rows <= kStreamMaxRows,
// seg.len >= 0, finite scores; `next` (prefetch only, never dereferenced beyond its first
// block's rows) is null or a valid segment of the same hkv and d.
//
// State update per row, for the visible scores s_j of the segment (j in order, blockwise):
//   m_new = max(row_max, max_j s_j); row_sum = row_sum * exp(row_max - m_new) + sum_j
//   exp(s_j - m_new); acc = acc * exp(row_max - m_new) + sum_j exp(s_j - m_new) v_j;
//   row_max = m_new. A row that has seen no key keeps row_max = -inf, row_sum = 0, acc = 0.
// Compiled for AVX-512 (16-lane vectors when d % 16 == 0), AVX2+FMA and baseline x86-64, chosen
// from the CPU's features (x86-64-v4, -v3 or neither).
// Thread-safety: a pure function on caller-owned memory.
#pragma once

#include <cstdint>

#include "kernels/decode_attention.h"

namespace tessera::kernels::internal {

inline constexpr int64_t kStreamBlockTokens = 64;
inline constexpr int64_t kStreamMaxRows = 16;
// Query rows (KV heads x rows) scored together in one pass over a token-major block.
inline constexpr int64_t kStreamMaxHeadRows = 16;

void DecodeStreamTile(const float* qs, int64_t hkv, int64_t rows, int64_t d, const KvSegment& seg,
                      const KvSegment* next, const int64_t* visible, float* row_max, float* row_sum,
                      float* acc);

// The per-target copies, for tests: StreamTargetSupported says whether this CPU runs `target`'s
// copy; DecodeStreamTileOn runs it (the CPU must support it). DecodeStreamTile runs the first
// supported one in this order.
enum class StreamTarget { kAvx512, kAvx2, kBaseline };
bool StreamTargetSupported(StreamTarget target);
void DecodeStreamTileOn(StreamTarget target, const float* qs, int64_t hkv, int64_t rows, int64_t d,
                        const KvSegment& seg, const KvSegment* next, const int64_t* visible,
                        float* row_max, float* row_sum, float* acc);

}  // namespace tessera::kernels::internal
