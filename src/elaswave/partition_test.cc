#include "elaswave/partition.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"

namespace tessera::elaswave {
namespace {

TEST(Partition, UniformSlotsSplitEvenly) {
  std::vector<SlotCost> slots(8, SlotCost{1.0, 100, 10});
  const std::vector<StageResources> stages(4);
  auto p = MinimaxPartition(slots, stages);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->begin, (std::vector<int>{0, 2, 4, 6, 8}));
  EXPECT_DOUBLE_EQ(p->tau_s, 2.0);
  EXPECT_EQ(p->StageOfSlot(5), 2);
}

TEST(Partition, FasterStageTakesMore) {
  std::vector<SlotCost> slots(6, SlotCost{1.0, 0, 0});
  std::vector<StageResources> stages(2);
  stages[1].speed = 2.0;
  auto p = MinimaxPartition(slots, stages);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->begin, (std::vector<int>{0, 2, 6}));
  EXPECT_DOUBLE_EQ(p->tau_s, 2.0);
}

TEST(Partition, PrefersTheSplitThatMovesLeast) {
  // Two equal-period splits of 3 slots over 2 stages when slot 1 costs 0: {0}{1,2} and
  // {0,1}{2}. Stage 1 already holds slot 1, so {0}{1,2} moves nothing.
  std::vector<SlotCost> slots = {{1.0, 100, 0}, {0.0, 100, 0}, {1.0, 100, 0}};
  std::vector<StageResources> stages(2);
  stages[0].held = {0};
  stages[1].held = {1, 2};
  auto p = MinimaxPartition(slots, stages);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->begin, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(p->moved_bytes, 0);
  stages[0].held = {0, 1};
  stages[1].held = {2};
  p = MinimaxPartition(slots, stages);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->begin, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(p->moved_bytes, 0);
}

TEST(Partition, MemoryCapsAndInfeasible) {
  std::vector<SlotCost> slots(4, SlotCost{1.0, 100, 0});
  std::vector<StageResources> stages(2);
  stages[0].mem_cap_bytes = 100;  // stage 0 fits one slot only
  auto p = MinimaxPartition(slots, stages);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->begin, (std::vector<int>{0, 1, 4}));
  stages[1].mem_cap_bytes = 200;
  p = MinimaxPartition(slots, stages);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(p.status().message().find("no partition of 4 layer slots over 2 stages"),
            std::string::npos);
}

TEST(Partition, BadInputs) {
  std::vector<SlotCost> slots(2, SlotCost{1.0, 0, 0});
  EXPECT_FALSE(MinimaxPartition(slots, std::vector<StageResources>(3)).ok());
  std::vector<StageResources> stages(1);
  stages[0].speed = 0;
  auto p = MinimaxPartition(slots, stages);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("stage 0: speed 0"), std::string::npos);
  slots[1].compute_s = -1;
  EXPECT_FALSE(MinimaxPartition(slots, std::vector<StageResources>(1)).ok());
}

// The DP against enumeration on seeded random instances: the same period, the same moved bytes,
// and infeasible exactly when enumeration finds nothing.
TEST(Partition, MatchesBruteForceOnRandomInstances) {
  core::Rng rng(20261206);
  int feasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int L = 1 + static_cast<int>(rng.Below(10));
    const int S = 1 + static_cast<int>(rng.Below(static_cast<uint64_t>(std::min(L, 4))));
    std::vector<SlotCost> slots(L);
    for (auto& c : slots) {
      c.compute_s = rng.Uniform(0.0, 3.0);
      if (rng.Below(5) == 0) c.compute_s = 1.0;  // exact ties happen
      c.state_bytes = static_cast<int64_t>(rng.Below(1000));
      c.act_bytes = static_cast<int64_t>(rng.Below(100));
    }
    std::vector<StageResources> stages(S);
    for (auto& s : stages) {
      s.speed = rng.Below(3) == 0 ? 1.0 : rng.Uniform(0.5, 2.0);
      s.p2p_s = rng.Uniform(0.0, 0.2);
      if (rng.Below(3) == 0) s.mem_cap_bytes = rng.Uniform(500.0, 5000.0);
      for (int l = 0; l < L; ++l) {
        if (rng.Below(3) == 0) s.held.insert(l);
      }
    }
    auto dp = MinimaxPartition(slots, stages);
    auto bf = BruteForcePartition(slots, stages);
    ASSERT_EQ(dp.ok(), bf.ok()) << "trial " << trial;
    if (!dp.ok()) {
      EXPECT_EQ(dp.status().code(), core::StatusCode::kInfeasible);
      continue;
    }
    ++feasible;
    EXPECT_NEAR(dp->tau_s, bf->tau_s, 1e-9 * bf->tau_s) << "trial " << trial;
    EXPECT_EQ(dp->moved_bytes, bf->moved_bytes) << "trial " << trial;
    ASSERT_EQ(dp->num_stages(), S);
    for (int j = 0; j < S; ++j) EXPECT_LT(dp->begin[j], dp->begin[j + 1]);
  }
  EXPECT_GT(feasible, 200);
}

}  // namespace
}  // namespace tessera::elaswave
