#include "kernels/decode_attention_tiles.h"

#include <cstdint>

#include "core/infinity.h"
#include "kernels/fast_exp.h"

// Each hot function is cloned for these targets and dispatched at load time (ifunc).
#define TESSERA_DECODE_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

namespace tessera::kernels::internal {

using core::kNegInf;

TESSERA_DECODE_CLONES
void DecodeScores(const float* q, int64_t rows, int64_t d, const float* k, int64_t stride,
                  int64_t n, float* s, int64_t ld) {
  for (int64_t t = 0; t < n; ++t) {
    const float* __restrict kt = k + t * stride;
    for (int64_t r = 0; r < rows; ++r) {
      const float* __restrict qr = q + r * d;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t x = 0; x < d; ++x) sum += qr[x] * kt[x];
      s[r * ld + t] = sum;
    }
  }
}

TESSERA_DECODE_CLONES
void DecodeSoftmax(float* s, int64_t rows, int64_t n, int64_t ld, const int64_t* visible,
                   float* row_max, float* row_sum, float* row_corr) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict row = s + r * ld;
    const int64_t c = visible == nullptr ? n : visible[r];
    float mx = kNegInf;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < c; ++j) mx = row[j] > mx ? row[j] : mx;
    const float m_old = row_max[r];
    const float m_new = m_old > mx ? m_old : mx;
    for (int64_t j = c; j < n; ++j) row[j] = 0.0f;
    if (m_new == kNegInf) {  // nothing seen yet and nothing visible here
      row_corr[r] = 1.0f;
      continue;
    }
    const float corr = m_old == kNegInf ? 0.0f : FastExp(m_old - m_new);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < c; ++j) {
      const float p = FastExp(row[j] - m_new);
      row[j] = p;
      sum += p;
    }
    row_sum[r] = row_sum[r] * corr + sum;
    row_max[r] = m_new;
    row_corr[r] = corr;
  }
}

TESSERA_DECODE_CLONES
void DecodeRescale(float* acc, int64_t rows, int64_t d, const float* corr) {
  for (int64_t r = 0; r < rows; ++r) {
    const float c = corr[r];
    if (c == 1.0f) continue;
    float* __restrict row = acc + r * d;
#pragma omp simd
    for (int64_t x = 0; x < d; ++x) row[x] *= c;
  }
}

TESSERA_DECODE_CLONES
void DecodeAccumulate(const float* p, int64_t rows, int64_t ld, const float* v, int64_t stride,
                      int64_t n, float* acc, int64_t d) {
  for (int64_t t = 0; t < n; ++t) {
    const float* __restrict vt = v + t * stride;
    for (int64_t r = 0; r < rows; ++r) {
      const float pr = p[r * ld + t];
      float* __restrict ar = acc + r * d;
#pragma omp simd
      for (int64_t x = 0; x < d; ++x) ar[x] += pr * vt[x];
    }
  }
}

}  // namespace tessera::kernels::internal
