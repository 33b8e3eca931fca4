#include "kernels/softmax_tiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/infinity.h"
#include "core/rng.h"
#include "kernels/kernels_test_util.h"

namespace tessera::kernels::internal {
namespace {

using testing::RandomNormal;

using core::kNegInf;

TEST(KernelsSoftmaxTilesTest, ExpMatchesLibmToAFewUlp) {
  double worst = 0.0;
  for (int i = 0; i <= 200000; ++i) {
    const double x = -87.0 + 175.0 * i / 200000.0;
    const double want = std::exp(static_cast<double>(static_cast<float>(x)));
    const double got = Exp(static_cast<float>(x));
    worst = std::max(worst, std::abs(got - want) / want);
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(Exp(0.0f), 1.0f);
  EXPECT_EQ(Exp(kNegInf), 0.0f);
  EXPECT_EQ(Exp(-1000.0f), 0.0f);
  EXPECT_TRUE(std::isfinite(Exp(1000.0f)));
}

// Two online steps over a (5, 37 + 20) score matrix against a direct double softmax.
TEST(KernelsSoftmaxTilesTest, OnlineSoftmaxOverTwoTilesMatchesDirect) {
  core::Rng rng(3);
  const int64_t rows = 5, cols1 = 37, cols2 = 20, ld = 40;
  std::vector<float> t1 = RandomNormal(rng, rows * ld, 3.0), t2 = RandomNormal(rng, rows * ld, 3.0);
  std::vector<float> s1 = t1, s2 = t2;
  std::vector<float> row_max(rows, kNegInf), row_sum(rows, 0.0f), corr(rows, -1.0f);
  OnlineSoftmaxTile(s1.data(), rows, cols1, ld, row_max.data(), row_sum.data(), corr.data());
  for (float c : corr) EXPECT_EQ(c, 0.0f);
  const std::vector<float> max_after_1 = row_max;
  OnlineSoftmaxTile(s2.data(), rows, cols2, ld, row_max.data(), row_sum.data(), corr.data());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY;
    for (int64_t j = 0; j < cols1; ++j) mx = std::max<double>(mx, t1[r * ld + j]);
    for (int64_t j = 0; j < cols2; ++j) mx = std::max<double>(mx, t2[r * ld + j]);
    double sum = 0.0;
    for (int64_t j = 0; j < cols1; ++j) sum += std::exp(t1[r * ld + j] - mx);
    for (int64_t j = 0; j < cols2; ++j) sum += std::exp(t2[r * ld + j] - mx);
    EXPECT_FLOAT_EQ(row_max[r], static_cast<float>(mx));
    EXPECT_NEAR(row_sum[r], sum, 1e-6 * sum);
    EXPECT_NEAR(corr[r], std::exp(max_after_1[r] - mx), 1e-6);
    for (int64_t j = 0; j < cols2; ++j) {
      EXPECT_NEAR(s2[r * ld + j], std::exp(t2[r * ld + j] - mx), 1e-6);
    }
    // Padding past `cols` is untouched.
    for (int64_t j = cols2; j < ld; ++j) EXPECT_EQ(s2[r * ld + j], t2[r * ld + j]);
  }
}

TEST(KernelsSoftmaxTilesTest, ExpMinusRowHandlesNegInfLse) {
  core::Rng rng(4);
  const int64_t rows = 3, cols = 19, ld = 19;
  std::vector<float> s = RandomNormal(rng, rows * ld);
  const std::vector<float> orig = s;
  const std::vector<float> lse = {0.5f, kNegInf, -2.0f};
  ExpMinusRowTile(s.data(), rows, cols, ld, lse.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) {
      const double want = r == 1 ? 0.0 : std::exp(static_cast<double>(orig[r * ld + j]) - lse[r]);
      EXPECT_NEAR(s[r * ld + j], want, 1e-6 * std::max(1.0, want));
    }
  }
}

TEST(KernelsSoftmaxTilesTest, GradScaleAndDotMatchScalar) {
  core::Rng rng(5);
  const int64_t rows = 4, cols = 33, ld = 36;
  const std::vector<float> p = RandomNormal(rng, rows * ld);
  std::vector<float> dp = RandomNormal(rng, rows * ld);
  const std::vector<float> dp0 = dp, delta = RandomNormal(rng, rows);
  SoftmaxGradTile(p.data(), dp.data(), rows, cols, ld, delta.data());
  std::vector<float> x = dp0;
  const std::vector<float> c = RandomNormal(rng, rows);
  ScaleRowsTile(x.data(), rows, cols, ld, c.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < ld; ++j) {
      const int64_t i = r * ld + j;
      EXPECT_FLOAT_EQ(dp[i], j < cols ? p[i] * (dp0[i] - delta[r]) : dp0[i]);
      EXPECT_FLOAT_EQ(x[i], j < cols ? dp0[i] * c[r] : dp0[i]);
    }
  }
  double dot = 0.0;
  for (int64_t j = 0; j < 131; ++j) dot += static_cast<double>(p[j]) * dp0[j];
  EXPECT_NEAR(Dot(p.data(), dp0.data(), 131), dot, 1e-5 * 131);
  EXPECT_EQ(Dot(p.data(), dp0.data(), 0), 0.0f);
}

}  // namespace
}  // namespace tessera::kernels::internal
