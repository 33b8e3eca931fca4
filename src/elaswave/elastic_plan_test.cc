#include "elaswave/elastic_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "elaswave/elaswave_test_util.h"

namespace tessera::elaswave {
namespace {

JobShape Shape(int dp, int pp, int tp) { return testing::TestShape(dp, pp, tp); }

std::vector<SlotCost> Costs(const JobShape& s) {
  return GptSlotCosts({/*vocab=*/1024, /*hidden=*/128, /*ffn=*/512, s.num_blocks, /*seq=*/128},
                      s.micro_batch, s.tp);
}

TEST(ElasticPlan, InitialPlanEveryPipelineAlike) {
  const JobShape s = Shape(2, 2, 2);
  auto plan = InitialPlan(s, Costs(s));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->pipelines.size(), 2u);
  EXPECT_EQ(plan->total_micro_batches(), 16);
  for (const PlanPipeline& p : plan->pipelines) {
    EXPECT_EQ(p.micro_batches, 8);
    ASSERT_EQ(p.stages.size(), 2u);
    EXPECT_EQ(p.stages[0].slot_begin, 0);
    EXPECT_EQ(p.stages[1].slot_end, 10);
    EXPECT_EQ(p.stages[0].slot_end, p.stages[1].slot_begin);
  }
  EXPECT_EQ(plan->pipelines[1].stages[1].ranks, (std::vector<int>{6, 7}));
  EXPECT_EQ(plan->Holders(9, 1), (std::vector<int>{3, 7}));
  EXPECT_EQ(plan->Position(5), std::make_pair(1, 0));
  EXPECT_TRUE(plan->transfers.empty());
  EXPECT_EQ(plan->epoch, 0);
}

TEST(ElasticPlan, KillOneRankShrinksItsPipelineAndMovesStateFromDpPeers) {
  const JobShape s = Shape(2, 2, 2);
  const auto costs = Costs(s);
  auto p0 = InitialPlan(s, costs);
  ASSERT_TRUE(p0.ok());
  const int stage1_begin = p0->pipelines[0].stages[1].slot_begin;
  auto p1 = Replan(s, costs, *p0, {3});  // pipeline 0, stage 1, tp rank 1
  ASSERT_TRUE(p1.ok()) << p1.status().ToString();
  EXPECT_EQ(p1->epoch, 1);
  EXPECT_EQ(p1->dead, (std::set<int>{3}));
  EXPECT_EQ(p1->spares, (std::vector<int>{2}));  // rank 3's TP peer
  ASSERT_EQ(p1->pipelines.size(), 2u);
  const PlanPipeline& shrunk = p1->pipelines[0];
  ASSERT_EQ(shrunk.stages.size(), 1u);
  EXPECT_EQ(shrunk.stages[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(shrunk.stages[0].slot_begin, 0);
  EXPECT_EQ(shrunk.stages[0].slot_end, 10);
  // The global batch is kept; the slower pipeline takes fewer micro-batches.
  EXPECT_EQ(p1->total_micro_batches(), 16);
  EXPECT_LT(shrunk.micro_batches, p1->pipelines[1].micro_batches);
  // Every slot of the lost stage moves to ranks 0 and 1, each from a live holder of the same tp
  // rank: tp rank 0 from rank 2 (the spare) or 6, tp rank 1 from 7 only.
  int moved = 0;
  for (const StateTransfer& t : p1->transfers) {
    EXPECT_GE(t.slot, stage1_begin);
    EXPECT_EQ(t.dst, t.tp_rank);
    if (t.tp_rank == 1) {
      EXPECT_EQ(t.src, 7);
    } else {
      EXPECT_TRUE(t.src == 2 || t.src == 6) << t.src;
    }
    EXPECT_GT(t.bytes, 0);
    ++moved;
  }
  EXPECT_EQ(moved, 2 * (10 - stage1_begin));
  // A pure function: the same inputs give the same digest; other inputs another.
  auto again = Replan(s, costs, *p0, {3});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->digest, p1->digest);
  auto other = Replan(s, costs, *p0, {4});
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->digest, p1->digest);
}

TEST(ElasticPlan, ALostReplicaGivesItsMicroBatchesToTheOthers) {
  const JobShape s = Shape(2, 1, 2);
  auto p0 = InitialPlan(s, Costs(s));
  ASSERT_TRUE(p0.ok());
  auto p1 = Replan(s, Costs(s), *p0, {2});
  ASSERT_TRUE(p1.ok()) << p1.status().ToString();
  ASSERT_EQ(p1->pipelines.size(), 1u);
  EXPECT_EQ(p1->pipelines[0].micro_batches, 16);
  EXPECT_TRUE(p1->transfers.empty());
  EXPECT_EQ(p1->spares, (std::vector<int>{3}));
}

TEST(ElasticPlan, SecondFailureBuildsOnTheFirst) {
  const JobShape s = Shape(2, 2, 2);
  const auto costs = Costs(s);
  auto p0 = InitialPlan(s, costs);
  auto p1 = Replan(s, costs, *p0, {3});
  ASSERT_TRUE(p1.ok());
  // Now rank 7 dies: tp rank 1 of the second half was held by 3 (dead) and 7 only, but ranks 1
  // took it over at epoch 1, so rank 5 receives it from rank 1.
  auto p2 = Replan(s, costs, *p1, {7});
  ASSERT_TRUE(p2.ok()) << p2.status().ToString();
  EXPECT_EQ(p2->epoch, 2);
  EXPECT_EQ(p2->dead, (std::set<int>{3, 7}));
  for (const StateTransfer& t : p2->transfers) {
    if (t.tp_rank == 1) {
      EXPECT_EQ(t.src, 1);
    }
    EXPECT_EQ(t.dst, 4 + t.tp_rank);
  }
  EXPECT_EQ(p2->total_micro_batches(), 16);
}

TEST(ElasticPlan, EveryHolderDeadIsUnrecoverableNamingLayerAndRanks) {
  const JobShape s = Shape(2, 2, 1);
  const auto costs = Costs(s);
  auto p0 = InitialPlan(s, costs);
  ASSERT_TRUE(p0.ok());
  // tp 1: ranks 1 and 3 are the only holders of the second half.
  auto p1 = Replan(s, costs, *p0, {1, 3});
  ASSERT_FALSE(p1.ok());
  EXPECT_EQ(p1.status().code(), core::StatusCode::kFailedPrecondition);
  const std::string first = SlotName(p0->pipelines[0].stages[1].slot_begin, 8);
  EXPECT_NE(p1.status().message().find("unrecoverable: " + first +
                                       " (tp rank 0) was held by "
                                       "ranks 1, 3 only, all dead"),
            std::string::npos)
      << p1.status().message();
  auto gone = Replan(s, costs, *p0, {0, 2});
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find("unrecoverable"), std::string::npos);
}

}  // namespace
}  // namespace tessera::elaswave
