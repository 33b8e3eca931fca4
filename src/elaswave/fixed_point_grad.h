// Gradients as int64 fixed point, so that the sum over micro-batches -- whichever pipeline
// computed them, in whatever order, reduced by whatever all-reduce -- has the same bits.
// Integer addition is associative; fp32 addition is not.
//
// A tensor's gradient of one micro-batch, g (fp32), becomes q = round_half_even(g * 2^e)
// (exact: g * 2^e is exact in double, and the rounding is the only inexact step). The
// exponent e is fixed per tensor for a step, from a bound on |g| the caller agrees on with
// every holder (ElasWave: the exact global max |sum| of the previous step, which every holder
// computes from the same int64 sums):
//   e = (62 - ceil(log2 M)) - headroom_bits - ceil(log2 bound)
// so that one micro-batch's |q| <= 2^(62 - ceil(log2 M)) and the sum of M of them stays below
// 2^62 (no int64 overflow). A micro-batch whose |q| would pass that limit is reported
// (overflow = true; nothing is added): the step must be redone with a larger bound, which every
// holder decides alike because the check depends only on the micro-batch's own gradient.
// The sum converts back with g_sum = q_sum * 2^-e (rounded to fp32 once).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

namespace tessera::elaswave {

inline constexpr int kGradHeadroomBits = 8;

// The exponent for micro-batch gradients bounded by `max_abs_bound` (> 0; 0 or non-finite are
// treated as 1) when `num_micro_batches` of them are summed. Clamped to [-200, 200].
int FixedPointExponent(double max_abs_bound, int64_t num_micro_batches,
                       int headroom_bits = kGradHeadroomBits);
// The largest |q| one micro-batch may contribute: 2^(62 - ceil(log2 M)).
int64_t FixedPointLimit(int64_t num_micro_batches);

struct QuantizeResult {
  bool overflow = false;  // some |q| > limit: nothing was added
  int64_t max_abs_q = 0;  // the largest |q| seen (up to the first overflow)
};
// acc[i] += round_half_even(g[i] * 2^exponent), all or nothing. g and acc have equal sizes.
// NaN or infinity in g counts as an overflow.
QuantizeResult AccumulateFixedPoint(std::span<const float> g, int exponent, int64_t limit,
                                    std::span<int64_t> acc);
// out[i] = fp32(q[i] * 2^-exponent).
void DequantizeFixedPoint(std::span<const int64_t> q, int exponent, std::span<float> out);
// max |q[i]| * 2^-exponent, exact in double up to rounding of the int64 to 53 bits.
double MaxAbsFixedPoint(std::span<const int64_t> q, int exponent);

}  // namespace tessera::elaswave
