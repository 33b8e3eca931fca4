#include "zellige/cost_model.h"

#include <gtest/gtest.h>

#include "zellige/cost_model_analytic.h"
#include "zellige/test_fixtures.h"

namespace tessera::zellige {
namespace {

using testing::TinyCluster;
using testing::TinyModel;

TEST(CostModelTest, DoublingLengthQuadruplesAttentionWork) {
  AnalyticCostModel cm(*hw::ClusterPreset("a800x16"), *models::DitModelPreset("wan2.1-1.3b"));
  for (double L : {1000.0, 8160.0, 497760.0}) {
    EXPECT_DOUBLE_EQ(cm.AttentionFlopsPerLayer(2 * L, 1), 4 * cm.AttentionFlopsPerLayer(L, 1));
    EXPECT_DOUBLE_EQ(cm.LinearFlopsPerLayer(2 * L), 2 * cm.LinearFlopsPerLayer(L));
  }
  // For a long sequence attention dominates, so the whole time nearly quadruples.
  double r = cm.WholeTime(400000) / cm.WholeTime(200000);
  EXPECT_GT(r, 3.5);
  EXPECT_LT(r, 4.0);
}

TEST(CostModelTest, WholeSequenceWorkedByHand) {
  AnalyticCostModel cm(TinyCluster(1, 2), TinyModel());
  // L = 100, d = 64, F = 128: linear 100 * (12*64^2 + 4*64*128) = 8,192,000 FLOPs;
  // attention 4 * 100^2 * 64 = 2,560,000 FLOPs; at 1 GFLOP/s:
  // fwd = 0.010752 s; bwd = recompute 0.010752 + 2 * 0.008192 + 2.5 * 0.00256 = 0.033536 s.
  SeqCost c = cm.Cost(100, {1, 1, 1}, {0});
  EXPECT_NEAR(c.fwd_s, 0.010752, 1e-12);
  EXPECT_NEAR(c.bwd_s, 0.033536, 1e-12);
  EXPECT_DOUBLE_EQ(c.comm_bytes, 0);
  EXPECT_NEAR(c.comm_s, 0, 1e-15);
}

TEST(CostModelTest, UlyssesBytesWorkedByHand) {
  AnalyticCostModel cm(TinyCluster(1, 2), TinyModel());
  // h = 2 over ranks {0, 1}: each rank has 50 tokens; sends half of Q,K,V,O:
  // 50 * 4 * 64 * 2 B / 2 = 12,800 B forward, twice that in recompute + backward.
  SeqCost c = cm.Cost(100, {1, 2, 1}, {0, 1});
  EXPECT_DOUBLE_EQ(c.comm_bytes, 3 * 12800.0);
  // Exposed communication: 3 all-to-alls of 12,800 B at 1 GB/s.
  EXPECT_NEAR(c.comm_s, 3 * 12800.0 / 1e9, 1e-12);
}

TEST(CostModelTest, CrossingNodesIsSlower) {
  AnalyticCostModel cm(TinyCluster(2, 2), TinyModel());
  SeqCost in_node = cm.Cost(4000, {1, 2, 1}, {0, 1});
  SeqCost across = cm.Cost(4000, {1, 2, 1}, {1, 2});
  EXPECT_GT(across.time_s(), in_node.time_s());
  EXPECT_DOUBLE_EQ(across.comm_bytes, in_node.comm_bytes);
  SeqCost ring_in = cm.Cost(4000, {1, 1, 2}, {0, 1});
  SeqCost ring_x = cm.Cost(4000, {1, 1, 2}, {0, 2});
  EXPECT_GE(ring_x.time_s(), ring_in.time_s());
}

TEST(CostModelTest, IdealSplitIsExactlyProportional) {
  AnalyticCostModel cm(*hw::ClusterPreset("a800x16"), *models::DitModelPreset("wan2.1-1.3b"),
                       {.ideal = true});
  double whole = cm.WholeTime(100000);
  for (ParallelConfig c :
       {ParallelConfig{1, 2, 1}, ParallelConfig{2, 1, 2}, ParallelConfig{1, 4, 4}}) {
    std::vector<int> ranks;
    for (int i = 0; i < c.degree(); ++i) ranks.push_back(i);
    EXPECT_NEAR(cm.Cost(100000, c, ranks).time_s(), whole / c.degree(), 1e-9 * whole);
  }
  EXPECT_TRUE(std::isinf(cm.MemoryCapacityBytes()));
}

TEST(CostModelTest, MemorySplitsAndMatchesTheTable) {
  AnalyticCostModel cm(*hw::ClusterPreset("a800x16"), *models::DitModelPreset("wan2.1-1.3b"));
  const double L = 497760;
  // A 15 s 1080p video does not fit one A800 whole, and fits split over 2.
  EXPECT_GT(cm.MemoryBytes(L, {1, 1, 1}), cm.MemoryCapacityBytes());
  EXPECT_LT(cm.MemoryBytes(L, {1, 1, 2}), cm.MemoryCapacityBytes());
  // Resident K/V per rank: whole L*kv; all-gather L*kv; Ulysses L*kv/h; ring L*kv/k.
  const models::DitModel& m = cm.model();
  auto act = [&](int degree) {
    double local = L / degree;
    return local * m.layers * m.hidden * 2 + local * (8.0 * m.hidden + 2.0 * m.ffn) * 2;
  };
  const double kv = L * m.kv_bytes_per_token();
  EXPECT_NEAR(cm.MemoryBytes(L, {1, 1, 1}), act(1) + kv, 1);
  EXPECT_NEAR(cm.MemoryBytes(L, {2, 1, 1}), act(2) + kv, 1);
  EXPECT_NEAR(cm.MemoryBytes(L, {1, 4, 1}), act(4) + kv / 4 + (L / 4) * 4 * m.hidden * 2, 1);
  EXPECT_NEAR(cm.MemoryBytes(L, {1, 1, 4}), act(4) + kv / 4 + 2 * kv / 4, 1);
  EXPECT_NEAR(models::DitModelPreset("wan2.1-1.3b")->params(), 1.39e9, 0.01e9);
}

}  // namespace
}  // namespace tessera::zellige
