// FastExp: a branch-free fp32 exp for element-wise loops that must auto-vectorise (softmax
// tiles, GELU/SiLU/tanh in models/ops.cc); std::exp is a libm call that stops vectorisation.
//
// Algorithm: x is clamped to [-87, 88]; exp(x) = 2^n * exp(r) with n = round(x / ln 2) read
// from the mantissa of x / ln 2 + 1.5 * 2^23 (no float->int conversion), r = x - n ln 2 in
// [-ln2/2, ln2/2] with a two-part ln 2 (r exact to fp32), exp(r) by its Taylor polynomial of
// degree kDegree (Horner), 2^n from exponent bits.
//
// Accuracy contract (fp32, tested against std::exp in double on seeded inputs, fast_exp_test):
//  - kDegree 7: relative error <= 2e-7 on [-86, 88] (truncation < 6e-9, the rest rounding;
//    measured max 1.0e-7);
//  - kDegree 6: relative error <= 4e-7 on [-86, 88] (truncation < 1.3e-7; measured 2.5e-7);
//  - x > 88 gives exp(88); NaN gives NaN; below -87 (including -inf):
//    ExpUnderflow::kZero gives 0, ExpUnderflow::kClamp gives FastExp(-87) (~1.6e-38).
// Results depend on the caller's floating-point contraction flags (-ffp-contract): the
// function is always inlined, so each translation unit keeps its own (bit-stable) results.
// Pure; thread-safe.
#pragma once

#include <bit>
#include <cstdint>

namespace tessera::kernels {

enum class ExpUnderflow {
  kZero,   // x < -87 (and -inf) -> 0: softmax weights of masked scores
  kClamp,  // x < -87 -> exp(-87): smooth activations (tanh, sigmoid) of huge negative inputs
};

template <int kDegree = 7, ExpUnderflow kUnderflow = ExpUnderflow::kZero>
[[gnu::always_inline]] inline float FastExp(float x) {
  static_assert(kDegree == 6 || kDegree == 7, "FastExp: degree 6 or 7");
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
  float p;
  if constexpr (kDegree == 7) {
    p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
  } else {
    p = 1.0f / 720.0f;
  }
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
  if constexpr (kUnderflow == ExpUnderflow::kZero) {
    return x < kLo ? 0.0f : y;
  } else {
    return y;
  }
}

}  // namespace tessera::kernels
