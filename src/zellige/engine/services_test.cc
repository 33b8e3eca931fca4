// The profiler, validate and compare services on 2 in-process fake ranks with a tiny SmallDit.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/in_process_communicator.h"
#include "zellige/cost_model_profile.h"
#include "zellige/engine/comparison.h"
#include "zellige/engine/profiler.h"
#include "zellige/engine/validation.h"

namespace tessera::zellige::engine {
namespace {

models::SmallDitConfig TinyDit() {
  models::SmallDitConfig c;
  c.in_channels = 4;
  c.hidden = 32;
  c.num_heads = 2;
  c.num_layers = 1;
  c.ffn_hidden = 64;
  return c;
}

ProfilerOptions TinyProfiler() {
  ProfilerOptions o;
  o.buckets = {8, 16, 32};
  o.whole_tokens = 32;
  o.repeats = 1;
  o.warmup = 0;
  o.model = TinyDit();
  return o;
}

ProfileCostModel TestCost() {
  auto p = LoadProfile(std::string(TESSERA_ZELLIGE_TESTDATA) + "/profile_2rank.json");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return ProfileCostModel(std::make_shared<const Profile>(*p));
}

TEST(ProfilerTest, PlansCoverEveryConfigAndBucket) {
  auto set = MakeProfilePlans(2, TinyProfiler());
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  // Degree 1: (1,1,1); degree 2: (2,1,1), (1,2,1), (1,1,2); 3 buckets each; + calibration, solo.
  EXPECT_EQ(set->points.configs.size(), 4u);
  ASSERT_EQ(set->plans.size(), 2u + 4 * 3);
  EXPECT_EQ(set->points.points[0].config, kCalibrationPoint);
  EXPECT_EQ(set->points.points[1].config, kSoloPoint);
  EXPECT_EQ(set->points.points[1].tokens, 8);  // nearest 32 / 4
  EXPECT_EQ(set->points.points[1].count, 4);
  // Whole sequences coalesce: 32 / 16 = 2 copies on each of 2 blocks.
  EXPECT_EQ(set->points.points[3].tokens, 16);
  EXPECT_EQ(set->batches[3].sequences.size(), 4u);
  for (size_t i = 0; i < set->plans.size(); ++i) EXPECT_EQ(set->plans[i].num_ranks, 2);
}

TEST(ProfilerTest, OptionErrorsNameTheOption) {
  ProfilerOptions o = TinyProfiler();
  o.buckets = {8, 16};
  auto set = MakeProfilePlans(2, o);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("buckets: config (1,1,1) needs >= 3 buckets"),
            std::string::npos)
      << set.status().message();
  o = TinyProfiler();
  o.repeats = 0;
  EXPECT_NE(MakeProfilePlans(2, o).status().message().find("repeats / warmup / whole_tokens: got"),
            std::string::npos);
}

TEST(ProfilerTest, CommFitsAgreeOnEveryRank) {
  std::vector<core::StatusOr<std::vector<CommFit>>> out(2, core::Internal("not run"));
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    world.set_op_timeout_s(60);
    out[world.rank()] = MeasureCommFits(world, 1);
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(out[r].ok()) << out[r].status().ToString();
    ASSERT_EQ(out[r]->size(), 3u);
    EXPECT_EQ((*out[r])[0].primitive, "all_to_all");
    EXPECT_EQ((*out[r])[2].primitive, "p2p");
    EXPECT_EQ((*out[r])[2].ranks, 2);
    EXPECT_EQ((*out[r])[1].points.size(), 6u);
    EXPECT_GE((*out[r])[1].alpha_s, 0);
  }
  EXPECT_EQ(*out[0], *out[1]);
}

// This test binary does not count heap allocations: rank 0's error reaches every rank.
TEST(ProfilerTest, RankZeroErrorReachesEveryRank) {
  std::vector<core::StatusOr<Profile>> out(2, core::Internal("not run"));
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    world.set_op_timeout_s(120);
    out[world.rank()] = MeasureProfile(world, TinyProfiler(), {});
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(out[r].ok());
    EXPECT_EQ(out[r].status().code(), core::StatusCode::kFailedPrecondition) << r;
    EXPECT_NE(out[r].status().message().find("does not count heap allocations"), std::string::npos);
  }
}

TEST(ValidationTest, WithoutHeapCountsFailsAlikeOnEveryRank) {
  const ProfileCostModel cost = TestCost();
  ValidationOptions o;
  o.token_scale = 0.0005;
  o.repeats = 1;
  o.warmup = 0;
  o.model = TinyDit();
  std::vector<core::Status> out(2, core::Internal("not run"));
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    world.set_op_timeout_s(120);
    out[world.rank()] = RunValidation(world, o, cost, {}).status();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out[r].code(), core::StatusCode::kFailedPrecondition) << out[r].ToString();
  }
}

TEST(ComparisonTest, RatiosAgainstZellige) {
  std::vector<CompareRow> rows(3);
  rows[0] = {"usp", true, "", 2, 4.0, 3.0, 0};
  rows[1] = {"zellige", true, "", 0, 2.0, 1.5, 0};
  rows[2] = {"dp", false, "infeasible", 0, 0, 0, 0};
  FillRatiosToZellige(&rows);
  EXPECT_TRUE(rows[0].has_ratios);
  EXPECT_DOUBLE_EQ(rows[0].measured_ratio_to_zellige, 2.0);
  EXPECT_DOUBLE_EQ(rows[0].predicted_ratio_to_zellige, 2.0);
  EXPECT_DOUBLE_EQ(rows[1].measured_ratio_to_zellige, 1.0);
  EXPECT_FALSE(rows[2].has_ratios);
  rows[1].planned = false;
  FillRatiosToZellige(&rows);
  EXPECT_FALSE(rows[0].has_ratios);
}

TEST(ComparisonTest, TwoPlannersOnFakeRanks) {
  const ProfileCostModel cost = TestCost();
  CompareOptions o;
  o.mixes = {"v50"};
  o.planners = {"zellige", "usp"};
  o.token_scale = 0.0005;
  o.repeats = 1;
  o.warmup = 0;
  o.model = TinyDit();
  std::vector<core::StatusOr<CompareReport>> out(2, core::Internal("not run"));
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    world.set_op_timeout_s(120);
    out[world.rank()] = RunComparison(world, o, cost, {});
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(out[r].ok()) << out[r].status().ToString();
    ASSERT_EQ(out[r]->mixes.size(), 1u);
    const CompareMix& m = out[r]->mixes[0];
    ASSERT_EQ(m.rows.size(), 2u);
    EXPECT_EQ(m.rows[0].planner, "zellige");
    EXPECT_TRUE(m.rows[0].planned) << m.rows[0].error;
    EXPECT_GT(m.rows[0].measured_s, 0);
    EXPECT_DOUBLE_EQ(m.rows[0].predicted_ratio_to_zellige, 1.0);
  }
  const core::Json j = ToJson(*out[0]);
  EXPECT_EQ(j["mixes"][0]["planners"][1]["planner"], "usp");
  EXPECT_TRUE(j["mixes"][0]["planners"][0].contains("measured_ratio_to_zellige"));
}

}  // namespace
}  // namespace tessera::zellige::engine
