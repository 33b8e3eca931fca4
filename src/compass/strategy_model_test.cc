// The unified strategy model and the selector: each family's time on hand-worked pipelines,
// te's composition, the overhead fit on exact synthetic data, and the selector's margin.
#include "compass/strategy_model.h"

#include <gtest/gtest.h>

#include "compass/selector.h"
#include "core/rng.h"

namespace tessera::compass {
namespace {

using comm::LinkAlgo;

StrategyInputs Inputs(TpOpKind kind, int tp, double gemm, double coll) {
  StrategyInputs in;
  in.kind = kind;
  in.tp = tp;
  in.gemm_s = gemm;
  in.coll_s = {{LinkAlgo::kRing1, coll}, {LinkAlgo::kRing2, coll / 2}, {LinkAlgo::kDirect, coll}};
  for (int d : {1, 2, 4}) {
    in.part_gemm_s[d] = gemm / d;
    in.part_coll_s[d] = coll / d;
  }
  return in;
}

// A name the test spells ("te", "decomp:2").
StrategyName Name(const std::string& text) {
  auto n = StrategyName::Parse(text);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return n.ok() ? *n : StrategyName{};
}

double Family(const std::string& f, const StrategyInputs& in, const Overheads& o, int d = 0) {
  auto t = PredictFamily(*ParseStrategyFamily(f), d, in, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : -1;
}

TEST(StrategyModel, FusedAllGatherIsABlockPipeline) {
  // 4 blocks of 2; steps of 2 (collective 6 over 3 steps): arrivals 0, 2, 4, 6 -> done 8.
  EXPECT_DOUBLE_EQ(Family("fused-ring1", Inputs(TpOpKind::kAllGatherGemm, 4, 8, 6), {}), 8);
  // Steps of 4: the last block waits for its arrival at 12.
  EXPECT_DOUBLE_EQ(Family("fused-ring1", Inputs(TpOpKind::kAllGatherGemm, 4, 8, 12), {}), 14);
  // kappa 1.5 on the blocks computed while others arrive: 3, 6, 9, then 9 + 2.
  EXPECT_DOUBLE_EQ(Family("fused-ring1", Inputs(TpOpKind::kAllGatherGemm, 4, 8, 6), {0, 0, 1.5}),
                   11);
  // alpha lengthens each step, delta each block.
  EXPECT_DOUBLE_EQ(Family("fused-ring1", Inputs(TpOpKind::kAllGatherGemm, 4, 8, 12), {1, 0.5, 1}),
                   3 * 5 + 2.5);
  // The double ring uses its own (here halved) collective.
  EXPECT_DOUBLE_EQ(Family("fused-ring2", Inputs(TpOpKind::kAllGatherGemm, 4, 8, 12), {}), 8);
  // wgrad is an AllGather-side pipeline too.
  EXPECT_DOUBLE_EQ(Family("fused-direct", Inputs(TpOpKind::kAllGatherWgrad, 4, 8, 6), {}), 8);
}

TEST(StrategyModel, FusedReduceScatterSendsEachPartialOnceComputed) {
  // Partials of 2 at 2, 4, 6 (own block at 8); sends of 2 end at 4, 6, 8 -> 8.
  EXPECT_DOUBLE_EQ(Family("fused-ring1", Inputs(TpOpKind::kGemmReduceScatter, 4, 8, 6), {}), 8);
  // Sends of 4: 2 -> 6, 6 -> 10, 10 -> 14.
  EXPECT_DOUBLE_EQ(Family("fused-ring1", Inputs(TpOpKind::kGemmReduceScatter, 4, 8, 12), {}), 14);
}

TEST(StrategyModel, NoneDecompAndTeCompose) {
  const StrategyInputs ag = Inputs(TpOpKind::kAllGatherGemm, 2, 10, 6);
  const Overheads o{0.5, 0.25, 1.2};
  EXPECT_DOUBLE_EQ(Family("none", ag, o), 10 + 6 + 0.75);
  EXPECT_DOUBLE_EQ(Family("decomp", ag, o, 4), o.Predict(2.5, 1.5, 4));
  OverheadTable table = {{{StrategyFamily::kFusedRing1, "ag"}, o},
                         {{StrategyFamily::kDecomp, "rs"}, o},
                         {{StrategyFamily::kNone, "ag"}, o}};
  auto te_ag = PredictStrategy(Name("te"), ag, table);
  ASSERT_TRUE(te_ag.ok());
  EXPECT_DOUBLE_EQ(*te_ag, Family("fused-ring1", ag, o));
  StrategyInputs rs = Inputs(TpOpKind::kGemmReduceScatter, 2, 10, 6);
  EXPECT_DOUBLE_EQ(*PredictStrategy(Name("te"), rs, table), Family("decomp", rs, o, 4));
  rs.part_gemm_s.erase(4);  // 4 infeasible: the largest degree below
  EXPECT_DOUBLE_EQ(*PredictStrategy(Name("te"), rs, table), Family("decomp", rs, o, 2));
  const StrategyInputs wg = Inputs(TpOpKind::kAllGatherWgrad, 2, 10, 6);
  EXPECT_DOUBLE_EQ(*PredictStrategy(Name("te"), wg, table), Family("none", wg, o));
  EXPECT_DOUBLE_EQ(*PredictStrategy(Name("decomp:2"), ag, {}), Family("decomp", ag, {}, 2));

  EXPECT_FALSE(PredictStrategy(Name("mpi"), ag, {}).ok());  // not modeled
  EXPECT_FALSE(PredictStrategy(Name("decomp:8"), ag, {}).ok());
  StrategyInputs no_direct = ag;
  no_direct.coll_s.erase(LinkAlgo::kDirect);
  EXPECT_FALSE(PredictStrategy(Name("fused-direct"), no_direct, {}).ok());
  EXPECT_EQ(Name("decomp:16").family, StrategyFamily::kDecomp);
}

TEST(StrategyModel, OverheadFitRecoversExactOverheads) {
  core::Rng rng(3);
  const Overheads truth{2e-6, 1e-6, 1.25};
  std::vector<StrategyInputs> inputs;
  for (int i = 0; i < 16; ++i) {
    inputs.push_back(Inputs(i % 2 ? TpOpKind::kAllGatherGemm : TpOpKind::kAllGatherWgrad, 4,
                            rng.Uniform(1e-5, 2e-4), rng.Uniform(1e-5, 2e-4)));
  }
  std::vector<StrategySample> samples;
  for (const StrategyInputs& in : inputs) {
    samples.push_back({&in, StrategyFamily::kFusedRing2, 0, Family("fused-ring2", in, truth)});
  }
  auto fit = FitOverheads(samples);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  for (const StrategySample& s : samples) {
    EXPECT_NEAR(Family("fused-ring2", *s.inputs, *fit), s.t_s, 1e-3 * s.t_s);
  }
  EXPECT_NEAR(fit->kappa, truth.kappa, 0.01);
  samples[1].family = StrategyFamily::kNone;
  EXPECT_FALSE(FitOverheads(samples).ok());
  EXPECT_FALSE(FitOverheads({samples[0], samples[2]}).ok());
}

TEST(Selector, PicksTheFastestUnlessUnderTheMargin) {
  // Communication-bound AllGather on 4 ranks: the double ring halves the collective.
  StrategyInputs in = Inputs(TpOpKind::kAllGatherGemm, 4, 8e-6, 24e-6);
  auto pick = SelectStrategy(in, {});
  ASSERT_TRUE(pick.ok()) << pick.status().ToString();
  EXPECT_EQ(pick->strategy.Name(), "fused-ring2");
  EXPECT_LT(pick->predicted_s, pick->none_s);
  EXPECT_NE(pick->reason.find("double ring"), std::string::npos) << pick->reason;
  ASSERT_FALSE(pick->candidates.empty());
  EXPECT_EQ(pick->candidates.front().first.Name(), "fused-ring2");
  for (size_t i = 1; i < pick->candidates.size(); ++i) {
    EXPECT_LE(pick->candidates[i - 1].second, pick->candidates[i].second);
  }
  // A tiny gain stays under a large margin: none, with the reason.
  auto cautious = SelectStrategy(Inputs(TpOpKind::kAllGatherGemm, 2, 1e-6, 1e-4), {}, {0.6, 16});
  ASSERT_TRUE(cautious.ok());
  EXPECT_EQ(cautious->strategy.Name(), "none");
  EXPECT_NE(cautious->reason.find("margin"), std::string::npos) << cautious->reason;
  // Degrees above max_degree are not candidates.
  auto capped = SelectStrategy(in, {}, {0.03, 2});
  ASSERT_TRUE(capped.ok());
  for (const auto& [name, t] : capped->candidates) EXPECT_NE(name.Name(), "decomp:4");
  EXPECT_FALSE(SelectStrategy(in, {}, {-0.1, 16}).ok());
  StrategyInputs empty;
  EXPECT_FALSE(SelectStrategy(empty, {}).ok());
}

}  // namespace
}  // namespace tessera::compass
