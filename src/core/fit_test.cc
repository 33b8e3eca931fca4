#include "core/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"

namespace tessera::core {
namespace {

TEST(FitTest, ExactRecoveryOnNoiselessData) {
  const std::array<double, 3> f{2e-3, 3e-6, 4e-11};
  std::vector<double> x{256, 1024, 4096, 16384, 65536}, y;
  for (double l : x) y.push_back(f[0] + f[1] * l + f[2] * l * l);
  auto q = FitQuadraticRelative(x, y);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR((*q)[i], f[i], 1e-7 * std::abs(f[i])) << i;
  auto qa = FitPolynomial(x, y, 2, FitWeighting::kAbsolute);
  ASSERT_TRUE(qa.ok()) << qa.status().ToString();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR((*qa)[i], f[i], 1e-6 * std::abs(f[i])) << i;
  EXPECT_NEAR(EvalPolynomial(*q, 2048), f[0] + f[1] * 2048 + f[2] * 2048 * 2048, 1e-12);

  std::vector<double> ym;
  for (double l : x) ym.push_back(1e5 + 12000 * l);
  auto line = FitLine(x, ym);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_NEAR((*line)[0], 1e5, 1e-3);
  EXPECT_NEAR((*line)[1], 12000, 1e-6);

  // A cubic, and a general basis (1, sin x) through SolveWeightedLeastSquares.
  const std::vector<double> xc{-2, -1, 0, 1, 2, 3};
  std::vector<double> yc, ys;
  std::vector<std::vector<double>> rows;
  for (double v : xc) {
    yc.push_back(1 - 2 * v + 0.5 * v * v * v);
    rows.push_back({1.0, std::sin(v)});
    ys.push_back(3 + 4 * std::sin(v));
  }
  auto cubic = FitPolynomial(xc, yc, 3, FitWeighting::kAbsolute);
  ASSERT_TRUE(cubic.ok());
  const std::vector<double> want{1, -2, 0, 0.5};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR((*cubic)[i], want[i], 1e-9) << i;
  auto basis = SolveWeightedLeastSquares(rows, ys, std::vector<double>(xc.size(), 1.0));
  ASSERT_TRUE(basis.ok());
  EXPECT_NEAR((*basis)[0], 3, 1e-12);
  EXPECT_NEAR((*basis)[1], 4, 1e-12);
}

// Plain reference: the 2x2 / 3x3 normal equations written out and solved by Cramer's rule.
double Det3(const double a[3][3]) {
  return a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
         a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
         a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
}

std::array<double, 3> ReferenceQuadratic(const std::vector<double>& x, const std::vector<double>& y,
                                         bool relative) {
  double a[3][3] = {}, b[3] = {};
  for (size_t i = 0; i < x.size(); ++i) {
    const double w = relative ? 1 / (y[i] * y[i]) : 1;
    const double p[3] = {1, x[i], x[i] * x[i]};
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) a[r][c] += w * p[r] * p[c];
      b[r] += w * p[r] * y[i];
    }
  }
  const double d = Det3(a);
  std::array<double, 3> out{};
  for (int j = 0; j < 3; ++j) {
    double aj[3][3];
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) aj[r][c] = c == j ? b[r] : a[r][c];
    out[j] = Det3(aj) / d;
  }
  return out;
}

TEST(FitTest, NoisyDataMatchesPlainReference) {
  Rng rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> x, y;
    const int n = 4 + static_cast<int>(rng.Below(8));
    for (int i = 0; i < n; ++i) {
      const double v = 1 + i + rng.Uniform();  // x in [1, 13): well conditioned unscaled
      x.push_back(v);
      y.push_back((2 + 0.5 * v + 0.1 * v * v) * (1 + 0.05 * (rng.Uniform() - 0.5)));
    }
    for (bool relative : {false, true}) {
      auto got =
          FitPolynomial(x, y, 2, relative ? FitWeighting::kRelative : FitWeighting::kAbsolute);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      const auto want = ReferenceQuadratic(x, y, relative);
      for (int j = 0; j < 3; ++j)
        EXPECT_NEAR((*got)[j], want[j], 1e-7 * (1 + std::abs(want[j])))
            << "trial " << trial << " relative " << relative << " c" << j;
    }
    // The line: slope = cov / var.
    auto line = FitLine(x, y);
    ASSERT_TRUE(line.ok());
    double mx = 0, my = 0;
    for (int i = 0; i < n; ++i) mx += x[i] / n, my += y[i] / n;
    double sxy = 0, sxx = 0;
    for (int i = 0; i < n; ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
    EXPECT_NEAR((*line)[1], sxy / sxx, 1e-12);
    EXPECT_NEAR((*line)[0], my - sxy / sxx * mx, 1e-10);
  }
}

TEST(FitTest, DegenerateInputIsInvalidArgument) {
  auto two = FitQuadraticRelative({1, 2, 2, 1}, {1, 2, 2, 1});
  EXPECT_EQ(two.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(two.status().message(), "fit: got 2 distinct x values with y > 0, must be >= 3");
  EXPECT_FALSE(FitQuadraticRelative({1, 2, 3}, {1, 0, 3}).ok());  // y <= 0 points are dropped
  EXPECT_EQ(FitQuadraticRelative({1, 2}, {1, 2, 3}).status().message(),
            "fit: got 2 x values and 3 y values, must be equal");
  EXPECT_EQ(FitLine({5, 5, 5}, {1, 2, 3}).status().message(),
            "fit: got 1 distinct x values, must be >= 2");
  EXPECT_FALSE(FitPolynomial({1, 2}, {1, 2}, -1, FitWeighting::kAbsolute).ok());
  EXPECT_FALSE(FitPolynomial({1, NAN, 3}, {1, 2, 3}, 2, FitWeighting::kAbsolute).ok());
  // Singular: two identical basis columns.
  auto sing = SolveWeightedLeastSquares({{1, 1}, {2, 2}, {3, 3}}, {1, 2, 3}, {1, 1, 1});
  EXPECT_EQ(sing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sing.status().message().find("singular"), std::string::npos);
  EXPECT_FALSE(SolveWeightedLeastSquares({{1}, {1, 2}}, {1, 2}, {1, 1}).ok());  // ragged
  EXPECT_FALSE(SolveWeightedLeastSquares({{1}, {2}}, {1, 2}, {1, -1}).ok());    // weight < 0
  EXPECT_FALSE(SolveWeightedLeastSquares({}, {}, {}).ok());
}

TEST(FitTest, EvalPolynomialIsHorner) {
  EXPECT_DOUBLE_EQ(EvalPolynomial(std::array<double, 3>{1, 2, 3}, 2), 1 + 4 + 12);
  EXPECT_DOUBLE_EQ(EvalPolynomial(std::vector<double>{}, 2), 0);
  EXPECT_DOUBLE_EQ(EvalPolynomial(std::array<double, 2>{-10, 1}, 3), -7);  // no clamping
}

}  // namespace
}  // namespace tessera::core

namespace tessera::core {
namespace {

TEST(FitTest, NonNegativeQuadraticNeverDipsBelowZero) {
  // Noisy times whose unconstrained relative fit has a negative minimum inside the range.
  const std::vector<double> x = {8, 16, 32, 64, 128};
  const std::vector<double> y = {0.0024, 0.0015, 0.0002, 0.00005, 0.0069};
  auto free = FitQuadraticRelative(x, y);
  ASSERT_TRUE(free.ok());
  double free_min = 1e9;
  for (double L = 1; L <= 256; L += 1) free_min = std::min(free_min, EvalPolynomial(*free, L));
  EXPECT_LT(free_min, 0);
  auto nn = FitQuadraticRelativeNonNegative(x, y);
  ASSERT_TRUE(nn.ok());
  for (double c : *nn) EXPECT_GE(c, 0);
  for (double L = 1; L <= 256; L += 1) EXPECT_GE(EvalPolynomial(*nn, L), 0);
  // Clean quadratic data: the constrained fit is the exact one.
  std::vector<double> y2;
  for (double v : x) y2.push_back(1e-4 + 2e-6 * v + 3e-8 * v * v);
  auto exact = FitQuadraticRelativeNonNegative(x, y2);
  ASSERT_TRUE(exact.ok());
  EXPECT_NEAR((*exact)[0], 1e-4, 1e-10);
  EXPECT_NEAR((*exact)[1], 2e-6, 1e-12);
  EXPECT_NEAR((*exact)[2], 3e-8, 1e-14);
}

}  // namespace
}  // namespace tessera::core
