#include "elaswave/recovery_report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "elaswave/elaswave_test_util.h"

namespace tessera::elaswave {
namespace {

// dp 2 x pp 2 x tp 1 over 4 slots of 1 s each (2 blocks), 8 micro-batches of 1 sequence.
JobShape HandShape() {
  JobShape s;
  s.dp = 2;
  s.pp = 2;
  s.tp = 1;
  s.num_blocks = 2;
  s.global_batch = 8;
  s.micro_batch = 1;
  return s;
}

std::vector<SlotCost> HandCosts() { return std::vector<SlotCost>(4, SlotCost{1.0, 100, 0}); }

// Fault-free: every stage runs 2 slots (c = 2 s), 4 micro-batches per pipeline: step
// (4 + 1) x 2 = 10 s; each stage busy 4/5 of it: cap 4 x (100 + 300 x 0.8) = 1360 W.
// Rank 3 (replica 1, stage 1) dies: rank 2 runs all 4 slots (c = 4 s) and gets slots 2 and 3
// from rank 1 (200 bytes). Micro-batches one at a time to argmin (m + S - 1) tau: 5 and 3, both
// pipelines 12 s. DVFS: W = 12 s for every stage, busy shares 5/6, 5/6, 1; the cap binds at
// tau = cbrt(300 (5/6 + 5/6 + 1) 12^3 / (1360 - 300)) = 10.925 s (> 12 / 1.15 = 10.43 s).
TEST(RecoveryReport, HandComputedLossOfOneStage) {
  auto r = BuildRecoveryReport(HandShape(), HandCosts(), {3});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->fault_free_step_s, 10, 1e-12);
  EXPECT_NEAR(r->power_cap_w, 1360, 1e-9);
  ASSERT_EQ(r->plan.pipelines.size(), 2u);
  EXPECT_EQ(r->plan.pipelines[0].micro_batches, 5);
  EXPECT_EQ(r->plan.pipelines[1].micro_batches, 3);
  ASSERT_EQ(r->stages.size(), 3u);
  EXPECT_EQ(r->stages[2].ranks, std::vector<int>{2});
  EXPECT_EQ(r->stages[2].slot_begin, 0);
  EXPECT_EQ(r->stages[2].slot_end, 4);
  EXPECT_NEAR(r->stages[2].micro_batch_s, 4, 1e-12);
  EXPECT_NEAR(r->stages[0].work_s, 12, 1e-12);
  EXPECT_NEAR(r->stages[0].busy_share, 5.0 / 6, 1e-12);
  EXPECT_NEAR(r->stages[2].work_s, 12, 1e-12);
  ASSERT_EQ(r->plan.transfers.size(), 2u);
  EXPECT_EQ(r->plan.transfers[0].src, 1);
  EXPECT_EQ(r->plan.transfers[0].dst, 2);
  EXPECT_EQ(r->moved_bytes, 200);
  EXPECT_NEAR(r->step_s, 12, 1e-12);
  EXPECT_NEAR(r->period_f1_s, 12, 1e-12);
  EXPECT_NEAR(r->power_f1_w, 300 + 300 * (8.0 / 3), 1e-9);  // 1100 W
  EXPECT_NEAR(r->energy_f1_j, 1100 * 12, 1e-9);
  EXPECT_NEAR(r->fault_free_energy_j, 1360 * 10, 1e-9);
  ASSERT_TRUE(r->dvfs_feasible) << r->dvfs_reason;
  const double tau = std::cbrt(300 * (8.0 / 3) * 1728 / 1060);
  EXPECT_NEAR(tau, 10.925, 1e-3);
  EXPECT_NEAR(r->dvfs.step_s, tau, 1e-9);
  EXPECT_EQ(r->dvfs.limited_by, "power cap");
  EXPECT_NEAR(r->step_dvfs_s, tau, 1e-9);  // every pipeline's 1F1B step is tau
  EXPECT_LE(r->dvfs.power_w, r->power_cap_w);
  for (const ReportStage& s : r->stages) EXPECT_NEAR(s.frequency, 12 / tau, 1e-9);
  const core::Json j = r->ToJson();
  EXPECT_EQ(j["kind"], "modeled");
  EXPECT_EQ(j["moved_bytes"], 200);
  EXPECT_EQ(j["transfers"][0]["slot_name"], "block 1");
  EXPECT_EQ(j["dvfs"]["limited_by"], "power cap");
  EXPECT_EQ(j["stages"].size(), 3u);
}

TEST(RecoveryReport, InfeasibleDvfsKeepsTheNominalFigures) {
  RecoveryReportOptions o;
  o.range = {1.5, 2.0};  // the cap needs tau >= 10.9 s, where f = 12 / tau < 1.5
  auto r = BuildRecoveryReport(HandShape(), HandCosts(), {3}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->dvfs_feasible);
  EXPECT_NE(r->dvfs_reason.find("where pipeline 0 stage 0 (ranks 0) (work 12 s) would run below "
                                "f_min 1.5"),
            std::string::npos)
      << r->dvfs_reason;
  EXPECT_EQ(r->step_dvfs_s, -1);
  EXPECT_NEAR(r->step_s, 12, 1e-12);
  for (const ReportStage& s : r->stages) EXPECT_EQ(s.frequency, 1);
  const core::Json j = r->ToJson();
  EXPECT_FALSE(j["dvfs"]["feasible"].get<bool>());
  EXPECT_TRUE(j["step_s"]["after_dvfs"].is_null());
}

// gpt-mini, dp 2 x pp 2 x tp 2, rank 5 dead: its group (4, 5) leaves, ranks 6 and 7 run every
// slot of replica 1 and receive stage 0's slots; the global batch is kept; never over the cap.
TEST(RecoveryReport, GptMiniLosesOneRank) {
  const JobShape shape = testing::TestShape();
  const std::vector<SlotCost> costs = GptSlotCosts({1024, 128, 512, 8, 128}, 2, 2);
  auto r = BuildRecoveryReport(shape, costs, {5});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->stages.size(), 3u);
  EXPECT_EQ(r->stages[2].ranks, (std::vector<int>{6, 7}));
  EXPECT_EQ(r->stages[2].slot_begin, 0);
  EXPECT_EQ(r->stages[2].slot_end, shape.num_slots());
  EXPECT_EQ(r->plan.total_micro_batches(), 16);
  EXPECT_EQ(r->plan.spares, std::vector<int>{4});
  int64_t bytes = 0;
  for (const StateTransfer& t : r->plan.transfers) {
    EXPECT_TRUE(t.dst == 6 || t.dst == 7) << t.dst;
    EXPECT_NE(t.src, 5);
    bytes += t.bytes;
  }
  EXPECT_GT(bytes, 0);
  EXPECT_EQ(r->moved_bytes, bytes);
  EXPECT_GT(r->step_s, r->fault_free_step_s);
  if (r->dvfs_feasible) {
    EXPECT_LE(r->dvfs.power_w, r->power_cap_w);
    EXPECT_LE(r->step_dvfs_s, r->step_s * (1 + 1e-12));
  }
}

TEST(RecoveryReport, BadInputAndUnrecoverable) {
  const auto message = [](const std::vector<int>& dead, const RecoveryReportOptions& o = {}) {
    auto r = BuildRecoveryReport(HandShape(), HandCosts(), dead, o);
    EXPECT_FALSE(r.ok());
    return r.status().message();
  };
  EXPECT_EQ(message({4}).rfind("dead: rank 4 is outside [0, 4) (dp 2 x pp 2 x tp 1", 0), 0u);
  EXPECT_EQ(message({-1}).rfind("dead: rank -1 is outside", 0), 0u);
  EXPECT_EQ(message({1, 1}).rfind("dead: rank 1 is named twice", 0), 0u);
  RecoveryReportOptions o;
  o.range = {1.2, 1.1};
  EXPECT_EQ(message({1}, o).rfind("f_min: got 1.2, above f_max 1.1", 0), 0u);
  o.range = {0.6, 3};
  EXPECT_EQ(message({1}, o).rfind("f_max: got 3, must be in (0, 2]", 0), 0u);
  EXPECT_EQ(message({0, 2}),
            "unrecoverable: embedding (tp rank 0) was held by ranks 0, 2 only, all dead");
  EXPECT_EQ(message({0, 1, 2, 3}).rfind("unrecoverable: no pipeline has a live", 0), 0u);
  auto r = BuildRecoveryReport(HandShape(), HandCosts(), {0, 2});
  EXPECT_EQ(r.status().code(), core::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tessera::elaswave
