// The streaming decode kernel of PartialAttention (decode_attention.cc) for few query rows per KV
// head (decode: rows = Tq * G, typically 1-8): one pass over a tile of keys and values in blocks
// of kStreamBlockTokens tokens, with the scores of a block held in registers and L1, an online
// softmax that rescales a row's accumulator only when its running max grows, and the P V
// product accumulated in registers over the block. K and V are each read once per call.
// Software prefetch requests the K and V rows 16 tokens ahead of the ones consumed, in address
// order (token-major: whole rows of every KV head on the first head's pass), within the tile.
//
// Layouts (fp32): qs (scaled queries) and acc (unnormalised outputs) are [kv][rows][d]
// contiguous; row_max and row_sum are [kv][rows]. Element [t, g, x] of the tile's K is
// k[t * token_stride + g * head_stride + x] (V likewise). Rows of one KV head see the first
// visible[r] tokens of the tile (all n when visible is null); the rest get weight 0.
// Requirements (checked by the caller, not here): d % 8 == 0, 1 <= rows <= kStreamMaxRows,
// n >= 0, finite scores.
//
// State update per row, for the visible scores s_j of the tile (j in order, blockwise):
//   m_new = max(row_max, max_j s_j); row_sum = row_sum * exp(row_max - m_new) + sum_j
//   exp(s_j - m_new); acc = acc * exp(row_max - m_new) + sum_j exp(s_j - m_new) v_j;
//   row_max = m_new. A row that has seen no key keeps row_max = -inf, row_sum = 0, acc = 0.
// Compiled for AVX-512, AVX2+FMA and baseline x86-64 and chosen at load time (target_clones).
// Thread-safety: a pure function on caller-owned memory.
#pragma once

#include <cstdint>

namespace tessera::kernels::internal {

inline constexpr int64_t kStreamBlockTokens = 64;
inline constexpr int64_t kStreamMaxRows = 16;

void DecodeStreamTile(const float* qs, int64_t hkv, int64_t rows, int64_t d, const float* k,
                      const float* v, int64_t token_stride, int64_t head_stride, int64_t n,
                      const int64_t* visible, float* row_max, float* row_sum, float* acc);

}  // namespace tessera::kernels::internal
