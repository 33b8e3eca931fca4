#include "elaswave/fixed_point_grad.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tessera::elaswave {
namespace {

int CeilLog2(int64_t n) {
  int k = 0;
  while ((int64_t{1} << k) < n && k < 62) ++k;
  return k;
}

}  // namespace

int64_t FixedPointLimit(int64_t num_micro_batches) {
  return int64_t{1} << (62 - CeilLog2(std::max<int64_t>(num_micro_batches, 1)));
}

int FixedPointExponent(double max_abs_bound, int64_t num_micro_batches, int headroom_bits) {
  if (!std::isfinite(max_abs_bound) || max_abs_bound <= 0) max_abs_bound = 1.0;
  int bound_exp = 0;
  const double mantissa = std::frexp(max_abs_bound, &bound_exp);  // bound = m 2^exp, m in [.5,1)
  // ceil(log2 bound): exp when the mantissa is exactly 0.5 means bound = 2^(exp-1).
  const int ceil_log2 = mantissa == 0.5 ? bound_exp - 1 : bound_exp;
  const int e =
      (62 - CeilLog2(std::max<int64_t>(num_micro_batches, 1))) - headroom_bits - ceil_log2;
  return std::clamp(e, -200, 200);
}

QuantizeResult AccumulateFixedPoint(std::span<const float> g, int exponent, int64_t limit,
                                    std::span<int64_t> acc) {
  // Two passes (check, then add) so that an overflow leaves `acc` untouched without a copy.
  QuantizeResult r;
  const double lim = static_cast<double>(limit);
  for (float v : g) {
    const double x = std::ldexp(static_cast<double>(v), exponent);
    if (!std::isfinite(x) || std::fabs(x) > lim) {
      r.overflow = true;
      return r;
    }
    r.max_abs_q = std::max(r.max_abs_q, static_cast<int64_t>(std::fabs(std::nearbyint(x))));
  }
  for (size_t i = 0; i < g.size(); ++i) {
    // Default rounding mode: half to even.
    acc[i] += static_cast<int64_t>(std::nearbyint(std::ldexp(static_cast<double>(g[i]), exponent)));
  }
  return r;
}

void DequantizeFixedPoint(std::span<const int64_t> q, int exponent, std::span<float> out) {
  for (size_t i = 0; i < q.size(); ++i) {
    out[i] = static_cast<float>(std::ldexp(static_cast<double>(q[i]), -exponent));
  }
}

double MaxAbsFixedPoint(std::span<const int64_t> q, int exponent) {
  int64_t m = 0;
  for (int64_t v : q) m = std::max(m, v == INT64_MIN ? INT64_MAX : (v < 0 ? -v : v));
  return std::ldexp(static_cast<double>(m), -exponent);
}

}  // namespace tessera::elaswave
