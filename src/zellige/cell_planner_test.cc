// Hierarchical planning (cell_planner.h): dealing, cell size, validity and bounds against
// the flat planner and the exact joint reference, on seeded random inputs.
#include "zellige/cell_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"
#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "workload/batch.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/evaluate.h"
#include "zellige/test_fixtures.h"
#include "zellige/zellige_planner.h"

namespace tessera::zellige {
namespace {

struct GroupSetup {
  std::vector<SeqGroup> groups;
  std::vector<std::vector<GroupOption>> options;
};

GroupSetup GroupsOf(const workload::Batch& batch, const CostModel& cost) {
  GroupSetup s;
  s.groups = GroupSequences(batch, cost);
  for (const auto& g : s.groups)
    s.options.push_back(GroupOptions(g.tokens, cost, cost.MemoryCapacityBytes()));
  return s;
}

workload::Batch Generated(int mix, int ranks, uint64_t seed, int64_t load = 350000) {
  return *workload::GenerateBatch({mix, load, 15, ranks, seed});
}

TEST(CellPlannerTest, DealingPlacesEverySequenceOnceAndBalancesWork) {
  const hw::Cluster cl = *hw::ClusterPreset("h100x64");
  AnalyticCostModel cost(cl, *models::DitModelPreset("wan2.1-1.3b"));
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const workload::Batch batch = Generated(35 + 5 * static_cast<int>(seed % 6), 64, seed);
    const GroupSetup s = GroupsOf(batch, cost);
    const auto cells = DealToCells(s.groups, s.options, 4, 16);
    ASSERT_EQ(cells.size(), 4u);
    std::vector<int> seen(batch.sequences.size(), 0);
    std::vector<double> work;
    double heaviest = 0;
    for (size_t g = 0; g < s.groups.size(); ++g) {
      double w = INFINITY;
      for (const auto& o : s.options[g])
        if (o.degree <= 16) w = std::min(w, o.time_s * o.degree);
      heaviest = std::max(heaviest, w);
    }
    for (const auto& cell : cells) {
      double cw = 0;
      for (const auto& g : cell) {
        for (int q : g.seqs) ++seen[q];
        for (size_t i = 0; i < s.groups.size(); ++i) {
          if (s.groups[i].tokens != g.tokens) continue;
          double w = INFINITY;
          for (const auto& o : s.options[i])
            if (o.degree <= 16) w = std::min(w, o.time_s * o.degree);
          cw += w * g.seqs.size();
        }
      }
      work.push_back(cw);
    }
    for (int c : seen) EXPECT_EQ(c, 1);
    const auto [lo, hi] = std::minmax_element(work.begin(), work.end());
    EXPECT_LE(*hi - *lo, heaviest * (1 + 1e-9)) << "seed " << seed;  // the LPT guarantee
    EXPECT_LE(*hi - *lo, 0.01 * *hi) << "seed " << seed;             // many light sequences
  }
}

TEST(CellPlannerTest, CellSizeGrowsForHeavySequencesAndFallsBackToFlat) {
  AnalyticCostModel cost(testing::TinyCluster(4, 4), testing::TinyModel(1));
  // Many equal light sequences: cells of the minimum size.
  std::vector<int64_t> light(64, 2000);
  GroupSetup s = GroupsOf(testing::MakeBatch(light), cost);
  EXPECT_EQ(ChooseCellRanks(s.groups, s.options, 16, 4), 4);
  // One sequence holding most of the work: no cell size below N keeps it small enough.
  std::vector<int64_t> heavy = {400000, 1000, 1000};
  s = GroupsOf(testing::MakeBatch(heavy), cost);
  EXPECT_EQ(ChooseCellRanks(s.groups, s.options, 16, 4), 16);
}

// The hierarchical planner on generated batches (64 ranks, 4 cells): valid, memory-feasible
// plans whose max rank load is the one reported, above the proven bound and within 1% of it.
TEST(CellPlannerTest, HierarchicalPlansAreValidAndWithinOnePercentOfTheBound) {
  const hw::Cluster cl = *hw::ClusterPreset("h100x64");
  AnalyticCostModel cost(cl, *models::DitModelPreset("wan2.1-1.3b"));
  for (int mix : {35, 50, 60}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const workload::Batch batch = Generated(mix, 64, seed);
      auto run = RunPlanner(**FindPlanner("zellige"), batch, cost, {});
      ASSERT_TRUE(run.ok()) << run.status().ToString();
      EXPECT_TRUE(run->sim.feasible) << run->sim.infeasible_reason;
      const PlannerStats& st = run->plan.stats;
      EXPECT_EQ(st.cells, 4);
      EXPECT_EQ(st.cell_ranks, 16);
      const double load = MaxRankLoad(run->plan, batch, cost);
      EXPECT_NEAR(load, st.max_rank_load_s, 1e-6 * load);
      EXPECT_GT(st.lower_bound_s, 0);
      EXPECT_LE(st.lower_bound_s, load * (1 + 1e-12));
      EXPECT_LE(load, st.lower_bound_s * 1.01) << "v" << mix << " seed " << seed;
    }
  }
}

TEST(CellPlannerTest, CellsAreNoWorseThanTheFlatPlannerBeyondOnePercent) {
  const hw::Cluster cl = *hw::ClusterPreset("h100x64");
  AnalyticCostModel cost(cl, *models::DitModelPreset("wan2.1-1.3b"));
  const workload::Batch batch = Generated(50, 64, 2, 150000);
  auto cells = RunPlanner(**FindPlanner("zellige"), batch, cost, {});
  auto flat = RunPlanner(**FindPlanner("zellige"), batch, cost, {{"zellige.cell_ranks", "64"}});
  ASSERT_TRUE(cells.ok() && flat.ok());
  EXPECT_EQ(flat->plan.stats.cells, 0);
  EXPECT_LE(MaxRankLoad(cells->plan, batch, cost), MaxRankLoad(flat->plan, batch, cost) * 1.01);
  // Both bounds are proven bounds on the same problem: each is below the other's plan.
  EXPECT_LE(cells->plan.stats.lower_bound_s, MaxRankLoad(flat->plan, batch, cost) * (1 + 1e-9));
}

// Against the exact joint MILP on tiny clusters (cells of 2 ranks on 8): the hierarchical
// plan is valid and no better than the joint optimum's bound; its own bound is below the
// joint plan's makespan.
TEST(CellPlannerTest, BoundAndPlanAgreeWithTheJointReference) {
  core::Rng rng(11);
  AnalyticCostModel cost(testing::TinyCluster(2, 4), testing::TinyModel(1));
  const int n = 8;
  int checked = 0;
  for (int trial = 0; trial < 200 && checked < 25; ++trial) {
    std::vector<int64_t> tokens;
    const int count = 8 + static_cast<int>(rng.Below(16));
    for (int i = 0; i < count; ++i)
      tokens.push_back(
          static_cast<int64_t>(std::exp(rng.Uniform(std::log(200.0), std::log(6000.0)))));
    const workload::Batch batch = testing::MakeBatch(tokens);
    if (!CheckBatchFits(batch, cost).ok()) continue;
    const GroupSetup s = GroupsOf(batch, cost);
    if (std::any_of(s.options.begin(), s.options.end(), [](const auto& o) { return o.empty(); }))
      continue;
    if (ChooseCellRanks(s.groups, s.options, n, 2) >= n) continue;
    CellPlanSettings cs;
    cs.min_cell_ranks = 2;
    cs.ecf.time_limit_s = 1;
    cs.ecf.split_time_limit_s = 0;
    auto cells = PlanInCells(s.groups, s.options, n, 2, cost.MemoryCapacityBytes(), cs);
    if (!cells.ok()) continue;  // a cell's memory can be short where the cluster's is not
    EcfSettings js;
    js.time_limit_s = 10;
    js.split_time_limit_s = 0;
    auto joint = PlanGroupsExactly(s.groups, cost, js, 0, 0, false);
    ASSERT_TRUE(joint.ok()) << joint.status().ToString();
    Plan plan{"cells", n, cells->placements, 0};
    ASSERT_TRUE(ValidatePlan(plan, batch, cost.model().heads).ok());
    EXPECT_NEAR(MaxRankLoad(plan, batch, cost), cells->max_rank_load_s,
                1e-6 * cells->max_rank_load_s);
    EXPECT_GE(cells->max_rank_load_s, joint->result.lower_bound_s * (1 - 1e-9));
    EXPECT_LE(cells->lower_bound_s, joint->result.makespan_s * (1 + 1e-9));
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(CellPlannerTest, ThreadsDoNotChangeThePlan) {
  const hw::Cluster cl = *hw::ClusterPreset("h100x64");
  AnalyticCostModel cost(cl, *models::DitModelPreset("wan2.1-1.3b"));
  const workload::Batch batch = Generated(60, 64, 4);
  auto one = RunPlanner(**FindPlanner("zellige"), batch, cost, {{"zellige.threads", "1"}});
  auto two = RunPlanner(**FindPlanner("zellige"), batch, cost, {{"zellige.threads", "2"}});
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_EQ(one->plan.placements.size(), two->plan.placements.size());
  for (size_t i = 0; i < one->plan.placements.size(); ++i) {
    EXPECT_EQ(one->plan.placements[i].seq, two->plan.placements[i].seq);
    EXPECT_EQ(one->plan.placements[i].ranks, two->plan.placements[i].ranks);
  }
}

TEST(CellPlannerTest, ReusedCellPlansEqualSolvedOnes) {
  const hw::Cluster cl = *hw::ClusterPreset("h100x64");
  AnalyticCostModel cost(cl, *models::DitModelPreset("wan2.1-1.3b"));
  const workload::Batch batch = Generated(50, 64, 1);
  auto reuse = RunPlanner(**FindPlanner("zellige"), batch, cost, {});
  auto solve = RunPlanner(**FindPlanner("zellige"), batch, cost, {{"zellige.reuse_cells", "off"}});
  ASSERT_TRUE(reuse.ok() && solve.ok());
  EXPECT_EQ(solve->plan.stats.cells_planned, 4);
  EXPECT_LE(reuse->plan.stats.cells_planned, 4);
  EXPECT_DOUBLE_EQ(reuse->plan.stats.max_rank_load_s, solve->plan.stats.max_rank_load_s);
}

TEST(CellPlannerTest, AnExhaustedTimeLimitStillGivesAValidPlanWithItsGap) {
  const hw::Cluster cl = *hw::ClusterPreset("h100x64");
  AnalyticCostModel cost(cl, *models::DitModelPreset("wan2.1-1.3b"));
  const workload::Batch batch = Generated(50, 64, 1);
  auto run = RunPlanner(**FindPlanner("zellige"), batch, cost,
                        {{"zellige.total_time_limit_s", "1e-6"}, {"zellige.threads", "1"}});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->plan.stats.deadline_hit);
  EXPECT_GE(run->plan.solver_gap, 0);
  EXPECT_LE(run->plan.stats.lower_bound_s, MaxRankLoad(run->plan, batch, cost) * (1 + 1e-12));
}

TEST(CellPlannerTest, BadCellOptionsAreRejected) {
  AnalyticCostModel cost(testing::TinyCluster(1, 2), testing::TinyModel(1));
  const workload::Batch b = testing::MakeBatch({1000, 200});
  auto run = RunPlanner(**FindPlanner("zellige"), b, cost, {{"zellige.cell_ranks", "12"}});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message(),
            "zellige: zellige.cell_ranks: got '12', must be a power of two in [1, 1e6]");
}

}  // namespace
}  // namespace tessera::zellige
