// Vectorised element-wise kernels on score tiles for the tiled attention (attention.cc):
// the online-softmax update of the forward and the P / dS steps of the backward.
//
// A tile is `rows` x `cols` fp32 values, row-major with leading dimension `ld` >= cols.
// Per-row vectors (row_max, row_sum, ...) hold `rows` contiguous floats. Each function is
// compiled for AVX-512, AVX2+FMA and baseline x86-64 and picks one at load time (GCC
// target_clones), so the library runs on any x86-64 CPU without -march=native.
// Exp is a polynomial with <= 2 ulp error (Exp below) for finite inputs; exp(-inf) = 0.
// Thread-safety: pure functions on caller-owned memory.
#pragma once

#include <cstdint>

namespace tessera::kernels::internal {

// exp(x) in fp32 with relative error below 3e-7 for x in [-87, 88]; returns 0 for x < -87
// (including -inf) and saturates at exp(88) above. Scalar entry point for tests.
float Exp(float x);

// Online softmax update for one (query tile, key tile) step. For each row r:
//   m_new = max(row_max[r], max_j s[r, j]);  corr = exp(row_max[r] - m_new)  (0 if -inf);
//   s[r, j] = exp(s[r, j] - m_new);  row_sum[r] = row_sum[r] * corr + sum_j s[r, j];
//   row_max[r] = m_new;  row_corr[r] = corr.
// Scores must be finite.
void OnlineSoftmaxTile(float* s, int64_t rows, int64_t cols, int64_t ld, float* row_max,
                       float* row_sum, float* row_corr);

// p[r, j] = exp(s[r, j] - lse[r]) in place (0 for a row whose lse is -inf).
void ExpMinusRowTile(float* s, int64_t rows, int64_t cols, int64_t ld, const float* lse);

// dp[r, j] = p[r, j] * (dp[r, j] - delta[r]) in place (both tiles share ld).
void SoftmaxGradTile(const float* p, float* dp, int64_t rows, int64_t cols, int64_t ld,
                     const float* delta);

// x[r, j] *= c[r] for a (rows, cols) block with leading dimension ld.
void ScaleRowsTile(float* x, int64_t rows, int64_t cols, int64_t ld, const float* c);

// Sum_j a[j] * b[j] (fp32 accumulation, vectorised).
float Dot(const float* a, const float* b, int64_t n);

}  // namespace tessera::kernels::internal
