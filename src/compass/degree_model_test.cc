#include "compass/degree_model.h"

#include <gtest/gtest.h>

#include "core/rng.h"

namespace tessera::compass {
namespace {

TEST(DegreeModel, FitRecoversExactCoefficients) {
  const DegreeFit truth{0.5, 10, 32};
  std::vector<std::pair<int, double>> samples;
  for (int d : {1, 2, 4, 8}) samples.push_back({d, truth.Predict(d)});
  auto fit = FitDegreeModel(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->a, 0.5, 1e-9);
  EXPECT_NEAR(fit->b, 10, 1e-9);
  EXPECT_NEAR(fit->c, 32, 1e-9);
  EXPECT_FALSE(FitDegreeModel({{1, 1}, {2, 1}}).ok());
  EXPECT_FALSE(FitDegreeModel({{1, 1}, {1, 2}, {2, 1}}).ok());
}

TEST(DegreeModel, ChoosesTheBetterFeasibleNeighbourOfSqrtCOverA) {
  // d* = sqrt(32 / 0.5) = 8.
  EXPECT_EQ(ChooseDegree({0.5, 10, 32}, {1, 2, 4, 8, 16}), 8);
  // d* = 8 infeasible: neighbours 6 and 12; T(6) = 3 + 10 + 5.33, T(12) = 6 + 10 + 2.67.
  EXPECT_EQ(ChooseDegree({0.5, 10, 32}, {1, 2, 3, 4, 6, 12}), 6);
  EXPECT_EQ(ChooseDegree({0, 10, 32}, {1, 2, 4}), 4);  // free parts: the largest
  EXPECT_EQ(ChooseDegree({1, 10, -1}, {1, 2, 4}), 1);  // nothing to hide: the smallest
  EXPECT_EQ(ChooseDegree({1, 1, 1000}, {2, 4}), 4);    // d* beyond the largest
}

TEST(DegreeModel, PipelineFormMatchesTheTwoStageSimulation) {
  // T(d) = a + b + (d - 1) max(a, b) with a = Tc/d + delta, b = Tm/d + alpha.
  core::Rng rng(5);
  for (int i = 0; i < 100; ++i) {
    const double tc = rng.Uniform(0.1, 10), tm = rng.Uniform(0.1, 10);
    const double alpha = rng.Uniform(0, 0.05), delta = rng.Uniform(0, 0.05);
    const DegreeFit f = AnalyticDegreeFit(tc, tm, alpha, delta);
    for (int d : {1, 2, 3, 8, 16}) {
      const double a = tc / d + delta, b = tm / d + alpha;
      const double pipeline = a + b + (d - 1) * std::max(a, b);
      // Exact when the regime of whole and part agree (a >= b iff tc + d delta >= tm + d alpha).
      if ((a >= b) == (tc >= tm)) {
        EXPECT_NEAR(f.Predict(d), pipeline, 1e-9) << i << " d " << d;
      }
    }
  }
}

TEST(DegreeModel, ClassFitRecoversAlphaAndDelta) {
  std::vector<DegreeSample> samples;
  const double alpha = 0.02, delta = 0.01;
  for (double tc : {1.0, 3.0}) {
    for (double tm : {0.5, 2.0, 6.0}) {
      for (int d : {1, 2, 4, 8}) {
        samples.push_back({tc, tm, d, AnalyticDegreeFit(tc, tm, alpha, delta).Predict(d)});
      }
    }
  }
  auto m = FitDegreeClass(samples);
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->alpha_s, alpha, 1e-9);
  EXPECT_NEAR(m->delta_s, delta, 1e-9);
  EXPECT_FALSE(FitDegreeClass({samples[0]}).ok());
}

}  // namespace
}  // namespace tessera::compass
