// Vectorised tile kernels of the decode attention (decode_attention.cc) for few query rows:
// scores of `rows` queries against a tile of keys, the online-softmax update with a per-row
// causal limit, the rescale of the output accumulators and the P V accumulation.
//
// Layouts (fp32): queries and accumulators are (rows, d) contiguous; the score tile is
// (rows, n) with leading dimension ld >= n; key and value rows are d contiguous elements
// `stride` elements apart (token t at k + t * stride). Each function is compiled for
// AVX-512, AVX2+FMA and baseline x86-64 and picks one at load time (GCC target_clones).
// Thread-safety: pure functions on caller-owned memory.
#pragma once

#include <cstdint>

namespace tessera::kernels::internal {

// s[r, t] = sum_x q[r, x] * k[t * stride + x] for r < rows, t < n.
void DecodeScores(const float* q, int64_t rows, int64_t d, const float* k, int64_t stride,
                  int64_t n, float* s, int64_t ld);

// Online softmax update of one tile. Row r sees its first c_r = visible[r] scores (all n when
// visible is null); the rest get weight 0. With m_new = max(row_max[r], max_{j<c_r} s[r, j]):
//   s[r, j] = exp(s[r, j] - m_new) for j < c_r, 0 otherwise;
//   row_corr[r] = exp(row_max[r] - m_new) (0 when row_max[r] = -inf, 1 when the row has
//   seen no key yet and sees none now); row_sum[r] = row_sum[r] * row_corr[r] + sum_j s[r, j];
//   row_max[r] = m_new. Visible scores must be finite.
void DecodeSoftmax(float* s, int64_t rows, int64_t n, int64_t ld, const int64_t* visible,
                   float* row_max, float* row_sum, float* row_corr);

// acc[r, :] *= corr[r] (rows with corr == 1 are left untouched).
void DecodeRescale(float* acc, int64_t rows, int64_t d, const float* corr);

// acc[r, x] += sum_t p[r, t] * v[t * stride + x] for r < rows, t < n.
void DecodeAccumulate(const float* p, int64_t rows, int64_t ld, const float* v, int64_t stride,
                      int64_t n, float* acc, int64_t d);

}  // namespace tessera::kernels::internal
