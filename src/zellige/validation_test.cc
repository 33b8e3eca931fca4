// The validate protocol's plans and its error arithmetic (MAE, MAPE) on hand-made cases.
#include <gtest/gtest.h>

#include <set>

#include "zellige/prediction_error.h"
#include "zellige/validation_plans.h"

namespace tessera::zellige {
namespace {

TEST(PredictionError, HandWorkedCase) {
  // |110-100| = 10 (10%), |45-50| = 5 (10%), |200-200| = 0, |30-40| = 10 (25%).
  auto e = ComparePredictions({110, 45, 200, 30}, {100, 50, 200, 40});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->count, 4);
  EXPECT_DOUBLE_EQ(e->mae, 25.0 / 4);
  EXPECT_DOUBLE_EQ(e->mape_percent, 45.0 / 4);
  EXPECT_DOUBLE_EQ(e->max_ape_percent, 25.0);
}

TEST(PredictionError, RejectsBadInput) {
  EXPECT_FALSE(ComparePredictions({1, 2}, {1}).ok());
  EXPECT_FALSE(ComparePredictions({}, {}).ok());
  auto z = ComparePredictions({1}, {0});
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("must be > 0"), std::string::npos);
}

TEST(ValidationPlans, TwentyOneValidPlansThatRotate) {
  for (int n : {1, 2, 4, 8}) {
    ValidationSpec spec;
    spec.num_ranks = n;
    auto cases = MakeValidationCases(spec);
    ASSERT_TRUE(cases.ok()) << cases.status().message();
    ASSERT_EQ(cases->size(), 21u);
    std::set<std::string> video_layouts;
    int split_plans = 0;
    for (const ValidationCase& c : *cases) {
      ASSERT_EQ(c.batch.sequences.size(), 53u);
      EXPECT_TRUE(ValidatePlan(c.plan, c.batch, spec.heads).ok()) << c.name;
      std::string layout;
      bool split = false;
      for (int j = 0; j < 3; ++j) {
        const Placement& p = c.plan.placements[j];
        layout += p.config.ToString() + "@" + std::to_string(p.ranks[0]) + ";";
        split |= p.config.degree() > 1;
      }
      video_layouts.insert(layout);
      split_plans += split ? 1 : 0;
    }
    // The three corner plans are all-whole.
    for (int i = 18; i < 21; ++i) {
      for (const Placement& p : (*cases)[i].plan.placements) EXPECT_EQ(p.config.degree(), 1);
    }
    if (n >= 2) {
      EXPECT_GE(split_plans, 9) << n;        // most mixed plans split a video
      EXPECT_GE(video_layouts.size(), 12u);  // rotations differ
    }
  }
}

TEST(ValidationPlans, BadSpec) {
  ValidationSpec spec;
  spec.token_scale = 0;
  EXPECT_FALSE(MakeValidationCases(spec).ok());
  spec.token_scale = 0.01;
  spec.num_ranks = 0;
  EXPECT_FALSE(MakeValidationCases(spec).ok());
}

// The probe holds the profile's whole points nearest 256, 512 and 1,024 tokens, on every rank.
TEST(ValidationPlans, DriftProbeHoldsTheProfilesWholePointsNear256To1024) {
  Profile p;
  p.ranks = 2;
  ConfigPrices whole;
  whole.config = ParallelConfig{};
  whole.points = {{64, 32, 2e-4, 4e-4, 2e4},
                  {256, 8, 1e-3, 2e-3, 1e5},
                  {724, 2, 3e-3, 6e-3, 3e5},
                  {1024, 2, 4e-3, 8e-3, 4e5},
                  {2048, 1, 9e-3, 2e-2, 8e5}};
  p.configs.push_back(whole);
  p.step_overhead_s = 0.02;
  auto d = MakeDriftProbe(p);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // Nearest 256: 256; nearest 512: 724 (212 away, 256 is 256 away); nearest 1,024: 1,024.
  // The reference is the raw points the profiler measured.
  const double compute = 8 * (1e-3 + 2e-3) + 2 * (3e-3 + 6e-3) + 2 * (4e-3 + 8e-3);
  EXPECT_DOUBLE_EQ(d->profiled_compute_s, compute);
  EXPECT_DOUBLE_EQ(d->profiled_makespan_s, compute + 0.02);
  const ValidationCase* c = &d->probe;
  EXPECT_EQ(c->name, "drift-probe (8 x 256 + 2 x 724 + 2 x 1024 tokens per rank)");
  ASSERT_EQ(c->plan.placements.size(), 24u);
  EXPECT_TRUE(ValidatePlan(c->plan, c->batch, 4).ok());
  for (size_t i = 0; i < 24; ++i) {
    const size_t j = i % 12;
    EXPECT_EQ(c->batch.sequences[c->plan.placements[i].seq].tokens,
              j < 8 ? 256 : (j < 10 ? 724 : 1024));
    EXPECT_EQ(c->plan.placements[i].ranks, std::vector<int>{static_cast<int>(i / 12)});
    EXPECT_TRUE(c->plan.placements[i].config.whole());
  }
  // A profile with one whole point probes it once.
  Profile one = p;
  one.configs[0].points = {{512, 4, 2e-3, 4e-3, 2e5}};
  auto d1 = MakeDriftProbe(one);
  ASSERT_TRUE(d1.ok()) << d1.status().ToString();
  EXPECT_EQ(d1->probe.name, "drift-probe (4 x 512 tokens per rank)");
  EXPECT_DOUBLE_EQ(d1->profiled_compute_s, 4 * 6e-3);
  // Rank 0 ran the probe's work 10% slower than profiled, rank 1 5% faster: those are the
  // rank time factors now, and the step overhead scales by their mean (1.025).
  auto now = DriftScaledProfile(p, *d, {1.1 * compute, 0.95 * compute});
  ASSERT_TRUE(now.ok()) << now.status().ToString();
  ASSERT_EQ(now->rank_time_factors.size(), 2u);
  EXPECT_DOUBLE_EQ(now->rank_time_factors[0], 1.1);
  EXPECT_DOUBLE_EQ(now->rank_time_factors[1], 0.95);
  EXPECT_DOUBLE_EQ(now->step_overhead_s, 0.02 * 1.025);
  EXPECT_EQ(now->configs, p.configs);
  EXPECT_FALSE(DriftScaledProfile(p, *d, {compute}).ok());
  auto wild = DriftScaledProfile(p, *d, {compute, 10 * compute});
  ASSERT_FALSE(wild.ok());
  EXPECT_NE(wild.status().message().find("rank 1 runs 10"), std::string::npos)
      << wild.status().message();
  // The solo probe: rank 0's 12 placements of the probe, on rank 0, nothing elsewhere; a
  // measured solo speed-up replaces the profile's, within [0.25, 8].
  auto solo = MakeSoloProbe(*d);
  ASSERT_TRUE(solo.ok()) << solo.status().ToString();
  EXPECT_EQ(solo->name,
            "drift-probe-solo (8 x 256 + 2 x 724 + 2 x 1024 tokens per rank on rank "
            "0 alone)");
  ASSERT_EQ(solo->plan.placements.size(), 12u);
  EXPECT_EQ(solo->plan.num_ranks, 2);
  EXPECT_TRUE(ValidatePlan(solo->plan, solo->batch, 4).ok());
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(solo->plan.placements[i].ranks, std::vector<int>{0});
    EXPECT_EQ(solo->batch.sequences[solo->plan.placements[i].seq].tokens,
              d->probe.batch.sequences[d->probe.plan.placements[i].seq].tokens);
  }
  auto with_solo = DriftScaledProfile(p, *d, {compute, compute}, 1.3);
  ASSERT_TRUE(with_solo.ok()) << with_solo.status().ToString();
  EXPECT_DOUBLE_EQ(with_solo->solo_speedup, 1.3);
  EXPECT_DOUBLE_EQ(now->solo_speedup, p.solo_speedup);  // no solo probe: unchanged
  auto bad_solo = DriftScaledProfile(p, *d, {compute, compute}, 9);
  ASSERT_FALSE(bad_solo.ok());
  EXPECT_NE(bad_solo.status().message().find("solo probe"), std::string::npos);
  DriftProbe one_rank = *d1;
  one_rank.probe.plan.num_ranks = 1;
  EXPECT_FALSE(MakeSoloProbe(one_rank).ok());
  p.configs.clear();
  EXPECT_FALSE(MakeDriftProbe(p).ok());
}

}  // namespace
}  // namespace tessera::zellige
