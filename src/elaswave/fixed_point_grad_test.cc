#include "elaswave/fixed_point_grad.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/rng.h"

namespace tessera::elaswave {
namespace {

std::vector<std::vector<float>> RandomGrads(core::Rng& rng, int M, int n, double scale) {
  std::vector<std::vector<float>> g(M, std::vector<float>(n));
  for (auto& mb : g) {
    for (float& x : mb) x = static_cast<float>(rng.Normal() * scale);
  }
  return g;
}

TEST(FixedPointGrad, ExponentAndLimit) {
  EXPECT_EQ(FixedPointLimit(1), int64_t{1} << 62);
  EXPECT_EQ(FixedPointLimit(16), int64_t{1} << 58);
  EXPECT_EQ(FixedPointLimit(17), int64_t{1} << 57);
  // bound 1 = 2^0, M = 16: e = 58 - 8 - 0.
  EXPECT_EQ(FixedPointExponent(1.0, 16), 50);
  EXPECT_EQ(FixedPointExponent(0.75, 16), 50);  // ceil(log2 0.75) = 0
  EXPECT_EQ(FixedPointExponent(0.5, 16), 51);   // exactly 2^-1
  EXPECT_EQ(FixedPointExponent(3.0, 16), 48);
  EXPECT_EQ(FixedPointExponent(0.0, 16), 50);      // no bound: as 1
  EXPECT_EQ(FixedPointExponent(1e-300, 16), 200);  // clamped
}

// The point of the exercise: any split of the micro-batches over any number of holders, summed in
// any order, gives the same int64 bits -- and fp32 sums do not.
TEST(FixedPointGrad, SumIsIndependentOfPlacementAndOrder) {
  core::Rng rng(11);
  const int M = 16, n = 4096;
  const auto g = RandomGrads(rng, M, n, 1e-3);
  double max_abs = 0;
  for (const auto& mb : g) {
    for (float x : mb) max_abs = std::max(max_abs, static_cast<double>(std::fabs(x)));
  }
  const int e = FixedPointExponent(max_abs, M);
  const int64_t limit = FixedPointLimit(M);
  std::vector<int64_t> reference(n, 0);
  for (const auto& mb : g) ASSERT_FALSE(AccumulateFixedPoint(mb, e, limit, reference).overflow);
  bool fp32_differs = false;
  std::vector<float> fp32_ref(n, 0.f);
  for (const auto& mb : g) {
    for (int i = 0; i < n; ++i) fp32_ref[i] += mb[i];
  }
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<int> order(M);
    std::iota(order.begin(), order.end(), 0);
    for (int i = M - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
    // Split into 1..4 "holders", each summing its share, then add the partial sums.
    const int holders = 1 + static_cast<int>(rng.Below(4));
    std::vector<std::vector<int64_t>> partial(holders, std::vector<int64_t>(n, 0));
    std::vector<std::vector<float>> partial32(holders, std::vector<float>(n, 0.f));
    for (int k = 0; k < M; ++k) {
      const int h = static_cast<int>(rng.Below(holders));
      ASSERT_FALSE(AccumulateFixedPoint(g[order[k]], e, limit, partial[h]).overflow);
      for (int i = 0; i < n; ++i) partial32[h][i] += g[order[k]][i];
    }
    std::vector<int64_t> total(n, 0);
    std::vector<float> total32(n, 0.f);
    for (int h = holders - 1; h >= 0; --h) {
      for (int i = 0; i < n; ++i) {
        total[i] += partial[h][i];
        total32[i] += partial32[h][i];
      }
    }
    EXPECT_EQ(total, reference) << "trial " << trial;
    for (int i = 0; i < n; ++i) {
      if (std::bit_cast<uint32_t>(total32[i]) != std::bit_cast<uint32_t>(fp32_ref[i])) {
        fp32_differs = true;
      }
    }
  }
  EXPECT_TRUE(fp32_differs) << "the fp32 control never changed: the test would not show a thing";
  // And the fixed-point sum is accurate: within M half-quanta of the exact (double) sum.
  std::vector<float> back(n);
  DequantizeFixedPoint(reference, e, back);
  for (int i = 0; i < n; ++i) {
    double exact = 0;
    for (const auto& mb : g) exact += mb[i];
    EXPECT_NEAR(back[i], exact, M * std::ldexp(0.5, -e) + std::fabs(exact) * 1e-7);
  }
}

TEST(FixedPointGrad, OverflowIsAllOrNothing) {
  std::vector<int64_t> acc = {5, 5, 5};
  const int M = 4;
  const int e = FixedPointExponent(1.0, M);  // room for |g| up to 2^8
  const std::vector<float> ok = {1.0f, -2.0f, 100.0f};
  const auto r = AccumulateFixedPoint(ok, e, FixedPointLimit(M), acc);
  EXPECT_FALSE(r.overflow);
  EXPECT_EQ(acc[0], 5 + (int64_t{1} << e));
  EXPECT_EQ(r.max_abs_q, static_cast<int64_t>(std::ldexp(100.0, e)));
  const std::vector<int64_t> before = acc;
  const std::vector<float> too_big = {0.0f, 1e6f, 0.0f};
  EXPECT_TRUE(AccumulateFixedPoint(too_big, e, FixedPointLimit(M), acc).overflow);
  EXPECT_EQ(acc, before);
  const std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN()};
  std::vector<int64_t> one = {0};
  EXPECT_TRUE(AccumulateFixedPoint(nan, e, FixedPointLimit(M), one).overflow);
  EXPECT_EQ(one[0], 0);
}

TEST(FixedPointGrad, RoundsHalfToEven) {
  std::vector<int64_t> acc = {0, 0, 0, 0};
  const std::vector<float> g = {0.5f, 1.5f, 2.5f, -0.5f};
  EXPECT_FALSE(AccumulateFixedPoint(g, 0, FixedPointLimit(1), acc).overflow);
  EXPECT_EQ(acc, (std::vector<int64_t>{0, 2, 2, 0}));
  EXPECT_DOUBLE_EQ(MaxAbsFixedPoint(std::vector<int64_t>{3, -7, 2}, 1), 3.5);
}

}  // namespace
}  // namespace tessera::elaswave
