#include "zellige/split_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"
#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/test_fixtures.h"

namespace tessera::zellige {
namespace {

SplitSearchSpace MakeSpace(const workload::Batch& batch, const CostModel& cost,
                           double fluid_fraction) {
  SplitSearchSpace s;
  s.num_ranks = cost.cluster().num_ranks();
  s.blocks = AlignedBlocks(s.num_ranks);
  s.mem_cap_bytes = cost.MemoryCapacityBytes();
  double work = 0, mem = 0;
  for (const auto& g : GroupSequences(batch, cost)) {
    s.options.push_back(GroupOptions(g.tokens, cost, s.mem_cap_bytes));
    s.group_sizes.push_back(static_cast<int>(g.seqs.size()));
    work += g.whole_time_s * g.seqs.size();
    mem += g.whole_mem_bytes * g.seqs.size();
  }
  // Fluid work as a share of the anchors' work, with their memory per second of work.
  s.fluid_time_s = fluid_fraction * work;
  s.fluid_mem_per_s = work > 0 ? 0.5 * mem / work : 0.0;
  s.bytes_scale = BytesScale(s.options, s.group_sizes);
  return s;
}

// The least T under which `picks` is feasible (bisection over the contract's condition).
double LeastLimit(const SplitSearchSpace& s, const std::vector<AnchorPick>& picks) {
  double lo = 0, hi = 1;
  while (!FitsLimit(s, picks, hi) && hi < 1e12) hi *= 2;
  if (hi >= 1e12) return INFINITY;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    (FitsLimit(s, picks, mid) ? hi : lo) = mid;
  }
  return hi;
}

int Splits(const SplitSearchSpace& s, const std::vector<AnchorPick>& picks) {
  int n = 0;
  for (const auto& p : picks) n += s.options[p.group][p.option].degree > 1;
  return n;
}

TEST(SplitSearchTest, NeverRaisesTheLimitNorTheSplitsOnRandomBatches) {
  core::Rng rng(2024);
  int improved = 0, checked = 0, repaired = 0;
  for (int trial = 0; checked < 300 && trial < 5000; ++trial) {
    hw::Cluster cl = *hw::ClusterPreset("a800x16");
    cl.nodes = 1 + static_cast<int>(rng.Below(2));
    cl.ranks_per_node = 1 << rng.Below(4);  // 1..8
    AnalyticCostModel cost(cl, *models::DitModelPreset("wan2.1-1.3b"));
    const int count = 1 + static_cast<int>(rng.Below(16));
    std::vector<int64_t> tokens;
    for (int i = 0; i < count; ++i) {
      // Few distinct lengths, so that groups hold several sequences.
      tokens.push_back(20000 * (1 + static_cast<int64_t>(rng.Below(4))) *
                       (1 + static_cast<int64_t>(rng.Below(6))));
    }
    const SplitSearchSpace s = MakeSpace(testing::MakeBatch(tokens), cost, rng.Uniform(0.0, 0.5));
    bool all_options = true;
    for (const auto& o : s.options) all_options &= !o.empty();
    if (!all_options) continue;
    // Start: least load after each placement (the greedy's fallback with no target).
    std::vector<AnchorPick> picks = LowSplitGreedy(s, -1.0, 0.0);
    if (picks.empty()) continue;
    const double t_star = LeastLimit(s, picks);
    if (!std::isfinite(t_star)) continue;
    const double limit = t_star * (1 + 1e-3);
    ASSERT_TRUE(FitsLimit(s, picks, limit));
    const double cost_before = TotalSplitCost(s, picks);
    const int splits_before = Splits(s, picks);
    std::vector<AnchorPick> after = picks;
    const int moves = ImproveSplits(s, limit, &after);
    ++checked;
    improved += moves > 0;
    ASSERT_EQ(after.size(), picks.size());
    EXPECT_TRUE(FitsLimit(s, after, limit)) << "trial " << trial;
    EXPECT_LE(TotalSplitCost(s, after), cost_before + 1e-12) << "trial " << trial;
    EXPECT_LE(Splits(s, after), splits_before) << "trial " << trial;
    EXPECT_EQ(moves > 0, TotalSplitCost(s, after) < cost_before) << "trial " << trial;
    // Every pick is legal and each group keeps its sequence count.
    std::vector<int> per_group(s.options.size(), 0);
    for (const auto& p : after) {
      ASSERT_GE(p.group, 0);
      ASSERT_LT(p.group, static_cast<int>(s.options.size()));
      ASSERT_LT(p.option, static_cast<int>(s.options[p.group].size()));
      EXPECT_EQ(s.blocks[p.block].size, s.options[p.group][p.option].degree);
      ++per_group[p.group];
    }
    EXPECT_EQ(per_group, s.group_sizes) << "trial " << trial;
    // The greedy under the limit returns legal picks too (feasibility is not promised).
    const std::vector<AnchorPick> greedy = LowSplitGreedy(s, limit, 0.0);
    ASSERT_EQ(greedy.size(), picks.size());
    // The pilot's completion, once repaired, is feasible; repairing a feasible start
    // changes nothing.
    std::vector<AnchorPick> pilot = PilotSplitGreedy(s, limit, limit, 0.0);
    ASSERT_EQ(pilot.size(), picks.size());
    if (RepairLimit(s, limit, &pilot)) {
      EXPECT_TRUE(FitsLimit(s, pilot, limit)) << "trial " << trial;
      ++repaired;
    }
    std::vector<AnchorPick> same = after;
    EXPECT_TRUE(RepairLimit(s, limit, &same));
    EXPECT_EQ(TotalSplitCost(s, same), TotalSplitCost(s, after));
  }
  EXPECT_EQ(checked, 300);
  EXPECT_GT(improved, 10);
  EXPECT_GT(repaired, 150);
}

// Two equal sequences, each split over both ranks: no single move helps (one whole sequence
// on a rank overloads it), but moving both at once runs each whole on its own rank at the
// same makespan and no split.
TEST(SplitSearchTest, PairMoveUnsplitsTwoSequences) {
  AnalyticCostModel cost(testing::TinyCluster(1, 2), testing::TinyModel(1), {.ideal = true});
  const SplitSearchSpace s = MakeSpace(testing::MakeBatch({3000, 3000}), cost, 0.0);
  ASSERT_EQ(s.options.size(), 1u);
  int split_option = -1;
  for (size_t j = 0; j < s.options[0].size(); ++j)
    if (s.options[0][j].degree == 2) split_option = static_cast<int>(j);
  ASSERT_GE(split_option, 0);
  int pair_block = -1;
  for (size_t b = 0; b < s.blocks.size(); ++b)
    if (s.blocks[b].size == 2) pair_block = static_cast<int>(b);
  std::vector<AnchorPick> picks = {{0, split_option, pair_block}, {0, split_option, pair_block}};
  const double limit = LeastLimit(s, picks) * (1 + 1e-6);
  EXPECT_GT(ImproveSplits(s, limit, &picks), 0);
  EXPECT_EQ(Splits(s, picks), 0);
  EXPECT_TRUE(FitsLimit(s, picks, limit));
  EXPECT_NE(picks[0].block, picks[1].block);
}

}  // namespace
}  // namespace tessera::zellige
