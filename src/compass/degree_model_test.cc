#include "compass/degree_model.h"

#include <gtest/gtest.h>

#include "compass/overlap_summary.h"
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
      const double kappa = rng.Uniform(1, 2);
      const DegreeFit fk = AnalyticDegreeFit(tc, tm, alpha, delta, kappa);
      const double a = tc / d + delta, b = tm / d + alpha;
      // Overlapped compute slowed by kappa: T = a + b + (d - 1) max(kappa a, b).
      const double slowed = a + b + (d - 1) * std::max(kappa * a, b);
      if ((kappa * a >= b) == (kappa * tc >= tm)) {
        EXPECT_NEAR(fk.Predict(d), slowed, 1e-9) << i << " d " << d;
      }
      const double pipeline = a + b + (d - 1) * std::max(a, b);
      // Exact when the regime of whole and part agree (a >= b iff tc + d delta >= tm + d alpha).
      if ((a >= b) == (tc >= tm)) {
        EXPECT_NEAR(f.Predict(d), pipeline, 1e-9) << i << " d " << d;
      }
    }
  }
}

TEST(DegreeModel, ClassFitRecoversAlphaDeltaAndKappa) {
  std::vector<DegreeSample> samples;
  const double alpha = 0.02, delta = 0.01, kappa = 1.25;
  for (double tc : {1.0, 3.0}) {
    for (double tm : {0.5, 2.0, 6.0}) {
      for (int d : {1, 2, 4, 8}) {
        samples.push_back({tc, tm, d, AnalyticDegreeFit(tc, tm, alpha, delta, kappa).Predict(d)});
      }
    }
  }
  auto m = FitDegreeClass(samples);
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->alpha_s, alpha, 1e-9);
  EXPECT_NEAR(m->delta_s, delta, 1e-9);
  EXPECT_NEAR(m->kappa, kappa, 1e-9);
  EXPECT_FALSE(FitDegreeClass({samples[0]}).ok());
}

// The bench summary on synthetic measurements that follow the model exactly: the class model
// predicts the held-out configurations without error and every per-operator fit is exact.
TEST(OverlapSummary, DegreeFiguresOnExactSyntheticData) {
  OverlapBench b;
  const double alpha = 2e-6, delta = 3e-6, kappa = 1.2;
  core::Rng rng(9);
  for (int i = 0; i < 12; ++i) {
    OverlapConfigResult c;
    c.shape = TpOpShape{i % 3 == 0 ? TpOpKind::kGemmRs : TpOpKind::kAgGemm,
                        1024,
                        64,
                        64,
                        2,
                        "cfg" + std::to_string(i)};
    c.gemm_s = rng.Uniform(1e-5, 1e-4);
    c.modeled_collective_s = rng.Uniform(1e-5, 1e-4);
    const DegreeFit f = AnalyticDegreeFit(c.gemm_s, c.modeled_collective_s, alpha, delta, kappa);
    for (int d : {1, 2, 4, 8, 16}) {
      OverlapRun r;
      r.strategy = "decomp:" + std::to_string(d);
      r.degree = d;
      r.median_s = r.min_s = r.max_s = f.Predict(d);
      c.runs.push_back(r);
    }
    OverlapRun none;
    none.strategy = "none";
    none.median_s = 2 * f.Predict(1);
    c.runs.push_back(none);
    b.configs.push_back(c);
  }
  const OverlapSummary s = SummarizeOverlap(b);
  EXPECT_NEAR(s.class_mape, 0, 1e-6);
  ASSERT_EQ(s.class_params.count("ag"), 1u);
  EXPECT_NEAR(s.class_params.at("ag")[2], kappa, 1e-9);
  EXPECT_EQ(s.degree.size(), 12u);
  EXPECT_NEAR(s.regret_p95, 0, 1e-9);
  EXPECT_GE(s.ratios.at("none/best").min, 2.0 - 1e-9);  // none takes twice decomp:1
}

}  // namespace
}  // namespace tessera::compass
