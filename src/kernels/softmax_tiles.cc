#include "kernels/softmax_tiles.h"

#include <bit>
#include <cstdint>
#include <limits>

#include "core/infinity.h"
#include "kernels/fast_exp.h"

// Each hot function is cloned for these targets and dispatched at load time (ifunc).
#define TESSERA_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

namespace tessera::kernels::internal {
namespace {

using core::kNegInf;

}  // namespace

float Exp(float x) { return FastExp(x); }

TESSERA_VECTOR_CLONES
void OnlineSoftmaxTile(float* s, int64_t rows, int64_t cols, int64_t ld, float* row_max,
                       float* row_sum, float* row_corr) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict row = s + r * ld;
    float mx = kNegInf;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < cols; ++j) mx = row[j] > mx ? row[j] : mx;
    const float m_old = row_max[r];
    const float m_new = m_old > mx ? m_old : mx;
    const float corr = m_old == kNegInf ? 0.0f : FastExp(m_old - m_new);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < cols; ++j) {
      const float p = FastExp(row[j] - m_new);
      row[j] = p;
      sum += p;
    }
    row_sum[r] = row_sum[r] * corr + sum;
    row_max[r] = m_new;
    row_corr[r] = corr;
  }
}

TESSERA_VECTOR_CLONES
void ExpMinusRowTile(float* s, int64_t rows, int64_t cols, int64_t ld, const float* lse) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict row = s + r * ld;
    const float shift = lse[r];
    if (shift == kNegInf) {
      for (int64_t j = 0; j < cols; ++j) row[j] = 0.0f;
      continue;
    }
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) row[j] = FastExp(row[j] - shift);
  }
}

TESSERA_VECTOR_CLONES
void SoftmaxGradTile(const float* p, float* dp, int64_t rows, int64_t cols, int64_t ld,
                     const float* delta) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict p_row = p + r * ld;
    float* __restrict dp_row = dp + r * ld;
    const float dr = delta[r];
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) dp_row[j] = p_row[j] * (dp_row[j] - dr);
  }
}

TESSERA_VECTOR_CLONES
void ScaleRowsTile(float* x, int64_t rows, int64_t cols, int64_t ld, const float* c) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict row = x + r * ld;
    const float cr = c[r];
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) row[j] *= cr;
  }
}

TESSERA_VECTOR_CLONES
float Dot(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

}  // namespace tessera::kernels::internal
