#include "kernels/softmax_tiles.h"

#include <bit>
#include <cstdint>
#include <limits>

// Each hot function is cloned for these targets and dispatched at load time (ifunc).
#define TESSERA_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

namespace tessera::kernels::internal {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (two-part
// ln 2 keeps r exact to fp32), exp(r) by its degree-7 Taylor polynomial (truncation < 6e-9).
// n is read from the mantissa of x / ln2 + 1.5 * 2^23 (round-to-nearest), so no float->int
// conversion is needed and the loop vectorises.
inline float ExpInline(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f;  // ln 2 rounded to 16 significant bits
  constexpr float kLn2Lo = 1.428606765330187045e-06f;
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23
  constexpr float kLo = -87.0f, kHi = 88.0f;
  const float xc = x < kLo ? kLo : (x > kHi ? kHi : x);
  const float t = xc * kLog2e + kShift;
  const float n = t - kShift;
  float r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // bits(t) - bits(kShift) == n as a two's complement integer; 2^n has exponent field n + 127.
  const uint32_t n_bits = std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kShift);
  const float two_n = std::bit_cast<float>((n_bits + 127u) << 23);
  const float y = p * two_n;
  return x < kLo ? 0.0f : y;
}

}  // namespace

float Exp(float x) { return ExpInline(x); }

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
    const float corr = m_old == kNegInf ? 0.0f : ExpInline(m_old - m_new);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < cols; ++j) {
      const float p = ExpInline(row[j] - m_new);
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
    for (int64_t j = 0; j < cols; ++j) row[j] = ExpInline(row[j] - shift);
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
