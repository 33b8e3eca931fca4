// Scoring the selector on a synthetic bench whose measurements follow the strategy model with
// known overheads: fitted on the even configurations they predict the odd ones and every
// held-out pick is right; a measured best the model cannot see is scored as a miss.
#include "compass/engine/selector_eval.h"

#include <gtest/gtest.h>

#include "core/rng.h"

namespace tessera::compass {
namespace {

using comm::LinkAlgo;

OverlapBench SyntheticBench(const OverheadTable& truth, uint64_t seed) {
  OverlapBench b;
  core::Rng rng(seed);
  for (int i = 0; i < 48; ++i) {
    OverlapConfigResult c;
    c.shape = TpOpShape{(i / 2) % 2 == 0 ? TpOpKind::kGemmReduceScatter : TpOpKind::kAllGatherGemm,
                        1024,
                        64,
                        64,
                        4,
                        "cfg" + std::to_string(i)};
    c.gemm_s = rng.Uniform(5e-6, 2e-4);
    const double m = rng.Uniform(5e-6, 2e-4);
    c.modeled_collective_s = m;
    c.modeled_collective_by_algo = {
        {LinkAlgo::kRing1, m}, {LinkAlgo::kRing2, m * 0.6}, {LinkAlgo::kDirect, m * 1.4}};
    for (const char* name :
         {"none", "fused-ring1", "fused-ring2", "fused-direct", "decomp:2", "decomp:4"}) {
      OverlapRun r;
      r.strategy = name;
      if (r.strategy.rfind("decomp:", 0) == 0) {
        r.degree = r.strategy.back() - '0';
        r.compute_s = c.gemm_s * (1 + 0.03 * r.degree);
        r.part_collective_s = m / r.degree + 1e-6;
      }
      c.runs.push_back(r);
    }
    const StrategyInputs in = StrategyInputsOf(c);
    for (OverlapRun& r : c.runs) {
      auto t = PredictStrategy(*StrategyName::Parse(r.strategy), in, truth);
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      r.median_s = r.min_s = r.max_s = *t;
    }
    b.configs.push_back(c);
  }
  return b;
}

OverheadTable Truth() {
  OverheadTable t;
  for (StrategyFamily f : FittedStrategyFamilies()) {
    t[{f, "ag"}] = Overheads{1e-6, 5e-7, 1.2};
    t[{f, "rs"}] = Overheads{2e-6, 3e-7, 1.1};
  }
  return t;
}

TEST(SelectorEvaluation, ExactMeasurementsGiveEveryHeldOutPick) {
  const OverlapBench b = SyntheticBench(Truth(), 4);
  auto e = EvaluateSelector(b, SelectorOptions{0.0, 16});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->held_out, 24);
  EXPECT_EQ(e->right, 24);
  EXPECT_EQ(e->regressions, 0);
  for (const SelectorRow& r : e->rows) {
    // Predictions of held-out rows match the measurements the model generated.
    if (r.held_out) {
      EXPECT_NEAR(r.predicted_s, r.pick_s, 2e-3 * r.pick_s) << r.label;
    }
    EXPECT_DOUBLE_EQ(r.tolerance, 0.02);
  }
  EXPECT_GE(e->strict_top1(), 22.0 / 24);
  EXPECT_LT(e->mape, 2e-3);
  EXPECT_EQ(e->family_mape.size(),
            FittedStrategyFamilies().size());  // ties within the fit's error may swap
  const core::Json j = ToJson(*e);
  EXPECT_EQ(j.at("rows").size(), e->rows.size());
  EXPECT_TRUE(j.at("overheads").contains("fused-ring2"));
}

TEST(SelectorEvaluation, AFasterStrategyTheModelCannotSeeIsAMiss) {
  OverlapBench b = SyntheticBench(Truth(), 5);
  // On every held-out configuration, fused-direct is measured at half the best's time.
  for (size_t i = 1; i < b.configs.size(); i += 2) {
    double best = 1;
    for (const OverlapRun& r : b.configs[i].runs) best = std::min(best, r.median_s);
    for (OverlapRun& r : b.configs[i].runs) {
      if (r.strategy == "fused-direct") r.median_s = best / 2;
    }
  }
  auto e = EvaluateSelector(b, SelectorOptions{0.0, 16});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  for (const SelectorRow& r : e->rows) {
    if (!r.held_out) continue;
    EXPECT_EQ(r.best, "fused-direct") << r.label;
    EXPECT_EQ(r.right, r.pick == "fused-direct") << r.label;
  }
  EXPECT_LT(e->top1(), 0.5);
  OverlapBench empty;
  EXPECT_FALSE(EvaluateSelector(empty).ok());
}

}  // namespace
}  // namespace tessera::compass
