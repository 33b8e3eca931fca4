#include "compass/degree_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compass/engine/overlap_summary.h"
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
  // Only degrees up to max_d (the fitted range) are chosen.
  EXPECT_EQ(ChooseDegree({0.5, 10, 500}, {1, 2, 4, 8, 16}), 16);
  EXPECT_EQ(ChooseDegree({0.5, 10, 500}, {1, 2, 4, 8, 16}, 8), 8);
  EXPECT_EQ(ChooseDegree({-1, 10, 5}, {1, 2, 4, 8, 16}, 8), 8);
  EXPECT_EQ(ChooseDegree({0.5, 10, 32}, {16, 32}, 8), 16);  // none <= max_d: all
}

TEST(DegreeModel, PipelineFitRecoversAlphaDeltaAndKappa) {
  const PipelineModel truth{3e-6, 1.5e-6, 1.3};
  core::Rng rng(21);
  std::vector<PipelineSample> samples;
  for (int i = 0; i < 12; ++i) {
    const double tc = rng.Uniform(5e-6, 2e-4), tm = rng.Uniform(5e-6, 1e-4);
    for (int d : {1, 2, 4, 8, 16}) {
      // A thin part's GEMM is less efficient: g_d above tc / d.
      const double g = tc / d * (1 + 0.05 * d), m = tm / d + 1e-6;
      samples.push_back({g, m, d, truth.Predict(g, m, d)});
    }
  }
  auto fit = FitPipelineModel(samples);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->alpha_s, truth.alpha_s, 2e-8);
  EXPECT_NEAR(fit->delta_s, truth.delta_s, 2e-8);
  EXPECT_NEAR(fit->kappa, truth.kappa, 2e-3);
  for (const PipelineSample& s : samples) {
    EXPECT_NEAR(fit->Predict(s.part_gemm_s, s.part_collective_s, s.d), s.t_s, 1e-3 * s.t_s);
  }
  EXPECT_FALSE(FitPipelineModel({samples[0], samples[1]}).ok());
  samples[3].t_s = 0;
  EXPECT_FALSE(FitPipelineModel(samples).ok());
  // A part with no time left is not a prediction.
  EXPECT_TRUE(std::isinf(PipelineModel{0, -1, 1}.Predict(0.5, 1, 2)));
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
    c.shape = TpOpShape{i % 3 == 0 ? TpOpKind::kGemmReduceScatter : TpOpKind::kAllGatherGemm,
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
      // Parts as the pipeline model sees them: g_d = Tc / d, m_d = Tm / d, the same alpha,
      // delta and kappa (the two forms agree where part and whole share a regime).
      r.compute_s = c.gemm_s;
      r.part_collective_s = c.modeled_collective_s / d;
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
  // The pipeline model is exact wherever the regimes agree; its fit may trade a little error
  // elsewhere, so its figures are bounded, not zero.
  ASSERT_EQ(s.pipeline_params.count("ag"), 1u);
  EXPECT_LT(s.pipeline_mape, 0.05);
  EXPECT_LT(s.pipeline_regret_p95, 0.05);
  for (const DegreeRow& r : s.degree) EXPECT_GT(r.d_pipeline, 0) << r.label;
  EXPECT_GE(s.ratios.at("none/best").min, 2.0 - 1e-9);  // none takes twice decomp:1
}

}  // namespace
}  // namespace tessera::compass
