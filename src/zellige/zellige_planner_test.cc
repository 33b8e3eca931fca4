#include "zellige/zellige_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/rng.h"
#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/evaluate.h"
#include "zellige/placement_options.h"
#include "zellige/test_fixtures.h"

namespace tessera::zellige {
namespace {

using testing::MakeBatch;

// Exhaustive optimum over every (option, aligned block) per sequence, options as the
// planners see them (GroupOptions), memory summed per rank.
double BruteForce(const workload::Batch& batch, const CostModel& cost) {
  const int n = cost.cluster().num_ranks();
  const double cap = cost.MemoryCapacityBytes();
  struct Choice {
    double time, mem;
    RankBlock block;
  };
  std::vector<std::vector<Choice>> choices;
  for (const auto& s : batch.sequences) {
    std::vector<Choice> c;
    for (const auto& o : GroupOptions(s.tokens, cost, cap))
      for (const auto& b : AlignedBlocks(n))
        if (b.size == o.degree) c.push_back({o.time_s, o.mem_bytes, b});
    choices.push_back(c);
  }
  double best = INFINITY;
  std::vector<size_t> idx(choices.size(), 0);
  while (true) {
    std::vector<double> load(n, 0.0), mem(n, 0.0);
    for (size_t i = 0; i < idx.size(); ++i) {
      const Choice& c = choices[i][idx[i]];
      AddToBlock(c.block, c.time, &load);
      AddToBlock(c.block, c.mem, &mem);
    }
    if (*std::max_element(mem.begin(), mem.end()) <= cap) {
      best = std::min(best, *std::max_element(load.begin(), load.end()));
    }
    size_t i = 0;
    while (i < idx.size() && ++idx[i] == choices[i].size()) idx[i++] = 0;
    if (i == idx.size()) break;
  }
  return best;
}

TEST(ZelligePlannerTest, JointAndZelligeMatchBruteForceOnTinyClusters) {
  core::Rng rng(99);
  int compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int per_node = 1 << rng.Below(2);  // 1 or 2
    const int nodes =
        per_node == 1 ? 2 + 2 * static_cast<int>(rng.Below(2)) : 1 + static_cast<int>(rng.Below(2));
    hw::Cluster cl = testing::TinyCluster(nodes, per_node);
    AnalyticCostModel cost(cl, testing::TinyModel(2));
    const int count = 1 + static_cast<int>(rng.Below(3));
    std::vector<int64_t> tokens;
    for (int i = 0; i < count; ++i) tokens.push_back(100 + static_cast<int64_t>(rng.Below(3000)));
    workload::Batch batch = MakeBatch(tokens);
    const double opt = BruteForce(batch, cost);
    // The makespan solve of the joint ECF is exact...
    EcfSettings exact;
    exact.minimize_splits = false;
    auto ecf = PlanGroupsExactly(GroupSequences(batch, cost), cost, exact, 0, 0, false);
    ASSERT_TRUE(ecf.ok()) << ecf.status().ToString();
    EXPECT_NEAR(ecf->result.makespan_s, opt, 1e-6 * opt) << "trial " << trial;
    EXPECT_TRUE(ecf->result.proven_optimal);
    // ... and the lexicographic second solve keeps the plan within (1 + 1e-3) of it.
    auto joint = RunPlanner(**FindPlanner("joint"), batch, cost, {});
    ASSERT_TRUE(joint.ok()) << joint.status().ToString();
    EXPECT_GE(MaxRankLoad(joint->plan, batch, cost), opt * (1 - 1e-9)) << "trial " << trial;
    EXPECT_LE(MaxRankLoad(joint->plan, batch, cost), opt * (1 + 1e-3) + 1e-12) << "trial " << trial;
    // Zellige is exact when every sequence is an anchor (one group: no fillers).
    std::vector<int64_t> same(count, tokens[0]);
    workload::Batch one_group = MakeBatch(same);
    auto z = RunPlanner(**FindPlanner("zellige"), one_group, cost, {});
    ASSERT_TRUE(z.ok()) << z.status().ToString();
    const double opt1 = BruteForce(one_group, cost);
    EXPECT_GE(MaxRankLoad(z->plan, one_group, cost), opt1 * (1 - 1e-9)) << "trial " << trial;
    EXPECT_LE(MaxRankLoad(z->plan, one_group, cost), opt1 * (1 + 1e-3) + 1e-12)
        << "trial " << trial;
    ++compared;
  }
  EXPECT_EQ(compared, 40);
}

// Theorem 2: one giant sequence of work N u and m = N p fillers of work delta, with
// u > (N - 1) p delta. Joint placement reaches u + p delta with ONE split; a disjoint-group
// placement reaches it only by splitting all m + 1.
TEST(ZelligePlannerTest, TheoremTwoConstruction) {
  const int n = 4, p = 2, m = n * p;
  AnalyticCostModel cost(testing::TinyCluster(1, n), *models::DitModelPreset("wan2.1-1.3b"),
                         {.ideal = true});
  std::vector<int64_t> tokens = {200000};
  for (int i = 0; i < m; ++i) tokens.push_back(2000);
  workload::Batch batch = MakeBatch(tokens);
  const double u = cost.WholeTime(200000) / n, delta = cost.WholeTime(2000);
  ASSERT_GT(u, (n - 1) * p * delta);
  const double bound = u + p * delta;
  for (const char* name : {"joint", "zellige"}) {
    auto run = RunPlanner(**FindPlanner(name), batch, cost, {});
    ASSERT_TRUE(run.ok()) << name << ": " << run.status().ToString();
    EXPECT_EQ(run->sim.split_sequences, 1) << name;
    EXPECT_NEAR(run->sim.makespan_s, bound, 1e-9 * bound) << name;
  }
  for (const auto& e : PlannerRegistry()) {
    if (!e.disjoint_groups) continue;
    auto run = RunPlanner(e, batch, cost, {});
    ASSERT_TRUE(run.ok());
    const bool optimal = run->sim.makespan_s <= bound * (1 + 1e-9);
    EXPECT_TRUE(!optimal || run->sim.split_sequences == m + 1)
        << e.name << " reached the bound with " << run->sim.split_sequences << " splits";
  }
  auto usp = RunPlanner(**FindPlanner("usp"), batch, cost, {});
  EXPECT_EQ(usp->sim.split_sequences, m + 1);
}

TEST(ZelligePlannerTest, ThousandRandomBatchesGiveValidPlansWithinMemory) {
  core::Rng rng(7);
  int planned = 0, failed = 0;
  const PlannerOptions fast = {{"zellige.time_limit_s", "0.05"},
                               {"zellige.split_time_limit_s", "0.005"}};
  for (int trial = 0; planned + failed < 1000 && trial < 100000; ++trial) {
    const int nodes = 1 + static_cast<int>(rng.Below(2));
    const int per_node = 1 << rng.Below(4);  // 1..8
    hw::Cluster cl = *hw::ClusterPreset("a800x16");
    cl.nodes = nodes;
    cl.ranks_per_node = per_node;
    AnalyticCostModel cost(cl, *models::DitModelPreset("wan2.1-1.3b"));
    const int count = 1 + static_cast<int>(rng.Below(30));
    std::vector<int64_t> tokens;
    for (int i = 0; i < count; ++i) {
      tokens.push_back(
          static_cast<int64_t>(std::exp(rng.Uniform(std::log(200.0), std::log(400000.0)))));
    }
    workload::Batch batch = MakeBatch(tokens);
    if (!CheckBatchFits(batch, cost).ok()) continue;
    // Keep batches whose total memory (each sequence at its least-memory split) leaves
    // 30% of the cluster free: a batch larger than the cluster cannot be planned at all.
    double total_mem = 0;
    for (int64_t t : tokens) {
      double best = INFINITY;
      for (const auto& o : GroupOptions(t, cost, cost.MemoryCapacityBytes()))
        best = std::min(best, o.mem_bytes * o.degree);
      total_mem += best;
    }
    if (total_mem > 0.7 * cost.MemoryCapacityBytes() * cost.cluster().num_ranks()) continue;
    auto run = RunPlanner(**FindPlanner("zellige"), batch, cost, fast);
    if (!run.ok()) {
      // Only memory can make a fitting batch unplannable, and it must say so.
      EXPECT_NE(run.status().message().find("planning failed"), std::string::npos)
          << run.status().ToString();
      ++failed;
      continue;
    }
    ++planned;
    // RunPlanner validated the plan (each sequence once, legal config and ranks).
    EXPECT_EQ(run->plan.placements.size(), batch.sequences.size());
    EXPECT_TRUE(run->sim.feasible) << "trial " << trial << ": " << run->sim.infeasible_reason;
    for (const auto& pl : run->plan.placements) {
      // Legal rank set: an aligned block of the planners' family.
      const int s = static_cast<int>(pl.ranks.size());
      EXPECT_EQ(pl.ranks[0] % s, 0);
      EXPECT_EQ(s & (s - 1), 0);
      for (int i = 1; i < s; ++i) EXPECT_EQ(pl.ranks[i], pl.ranks[0] + i);
    }
  }
  EXPECT_EQ(planned + failed, 1000);
  EXPECT_LE(failed, 10);
}

TEST(ZelligePlannerTest, CatalogCutSeparatesLightFromHeavy) {
  std::vector<SeqGroup> g(5);
  const double w[] = {1000, 900, 2, 1.5, 1};
  for (int i = 0; i < 5; ++i) g[i].whole_time_s = w[i];
  EXPECT_EQ(CatalogCut(g), 2);
  std::vector<SeqGroup> one(1);
  one[0].whole_time_s = 3;
  EXPECT_EQ(CatalogCut(one), 1);
  // Two equal groups: any cut ties; ties go to the fewest fillers.
  std::vector<SeqGroup> two(2);
  two[0].whole_time_s = two[1].whole_time_s = 5;
  EXPECT_EQ(CatalogCut(two), 1);
}

// The catalog per degree: every config within 2% of the fastest is either kept or
// dominated in (time, bytes) by a kept one; kept ones trade time for bytes; the least
// memory config is kept. Checked against every config of the degree.
TEST(ZelligePlannerTest, CatalogKeepsTheTimeBytesFront) {
  AnalyticCostModel cost(*hw::ClusterPreset("a800x16"), *models::DitModelPreset("wan2.1-1.3b"));
  const int64_t tokens = 497760;  // a 15 s 1080p video
  const double cap = cost.MemoryCapacityBytes();
  const std::vector<GroupOption> opts = GroupOptions(tokens, cost, cap);
  for (int degree : {8, 16}) {
    std::vector<GroupOption> kept;
    for (const auto& o : opts)
      if (o.degree == degree) kept.push_back(o);
    ASSERT_GE(kept.size(), 3u) << "degree " << degree;
    std::vector<int> ranks(degree);
    std::iota(ranks.begin(), ranks.end(), 0);
    double fastest = INFINITY, least_mem = INFINITY;
    for (const auto& c : ConfigsOfDegree(degree, 12)) {
      SeqCost sc = cost.Cost(tokens, c, ranks);
      if (sc.mem_bytes > cap) continue;
      fastest = std::min(fastest, sc.time_s());
    }
    for (const auto& c : ConfigsOfDegree(degree, 12)) {
      SeqCost sc = cost.Cost(tokens, c, ranks);
      if (sc.mem_bytes > cap || sc.time_s() > fastest * 1.02) continue;
      least_mem = std::min(least_mem, sc.mem_bytes);
      bool covered = false;
      for (const auto& k : kept)
        covered |= k.config == c || (k.time_s <= sc.time_s() && k.comm_bytes <= sc.comm_bytes);
      EXPECT_TRUE(covered) << c.ToString() << " at degree " << degree;
    }
    EXPECT_DOUBLE_EQ(kept[0].time_s, fastest);
    double mem_min = INFINITY;
    for (const auto& k : kept) mem_min = std::min(mem_min, k.mem_bytes);
    EXPECT_DOUBLE_EQ(mem_min, least_mem);
    // A slower kept config sends fewer bytes than a faster one, unless it is there for
    // its memory.
    for (const auto& a : kept)
      for (const auto& b : kept)
        if (b.time_s > a.time_s && b.mem_bytes != least_mem) {
          EXPECT_LT(b.comm_bytes, a.comm_bytes) << b.config.ToString();
        }
  }
}

// ECF hands CBC's progress out per solve, each closed by a final report; past its deadline the
// split-minimising solve is skipped (the plan is still made).
TEST(ZelligePlannerTest, EcfReportsEachSolveAndSkipsTheSplitSolvePastItsDeadline) {
  AnalyticCostModel cost(testing::TinyCluster(1, 4), testing::TinyModel(2));
  workload::Batch batch = MakeBatch({3000, 2900, 1700, 1200, 800, 450, 300});
  struct Report {
    std::string stage;
    solver::SolveProgress p;
  };
  std::vector<Report> reports;
  EcfSettings st;
  st.warm_start = false;  // CBC must search: the greedy start may already be optimal
  st.progress_interval_s = 0;
  st.progress = [&reports](const char* stage, const solver::SolveProgress& p) {
    reports.push_back({stage, p});
  };
  auto ecf = PlanGroupsExactly(GroupSequences(batch, cost), cost, st, 0, 0, false);
  ASSERT_TRUE(ecf.ok()) << ecf.status().ToString();
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.front().stage, "makespan");
  int makespan_done = 0;
  for (const Report& r : reports) {
    ASSERT_TRUE(r.stage == "makespan" || r.stage == "splits") << r.stage;
    if (r.stage == "makespan" && r.p.done) {
      ++makespan_done;
      EXPECT_NEAR(r.p.incumbent, ecf->result.makespan_s, 1e-6 * ecf->result.makespan_s);
    }
  }
  EXPECT_EQ(makespan_done, 1);
  // A deadline already passed: the makespan solve keeps the warm start, no split solve runs.
  reports.clear();
  st.warm_start = true;
  st.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto late = PlanGroupsExactly(GroupSequences(batch, cost), cost, st, 0, 0, false);
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  for (const Report& r : reports) EXPECT_EQ(r.stage, "makespan");
}

// The joint planner runs under one time limit for the whole plan (joint.time_limit_s, default
// kJointTimeLimitS) that its stats and progress name, with the bound its gap is over.
TEST(ZelligePlannerTest, JointNamesItsTimeLimitInStatsAndProgress) {
  AnalyticCostModel cost(testing::TinyCluster(1, 4), testing::TinyModel(2));
  workload::Batch batch = MakeBatch({3000, 2900, 1700, 1200, 800, 450, 300});
  std::vector<SolverProgress> reports;
  auto run = RunPlanner(**FindPlanner("joint"), batch, cost, {{"joint.time_limit_s", "30"}},
                        nullptr, [&reports](const SolverProgress& p) { reports.push_back(p); });
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const PlannerStats& s = run->plan.stats;
  EXPECT_EQ(s.time_limit_s, 30);
  EXPECT_GT(s.lower_bound_s, 0);
  EXPECT_GE(s.max_rank_load_s, s.lower_bound_s * (1 - 1e-9));
  EXPECT_EQ(s.max_rank_load_s, MaxRankLoad(run->plan, batch, cost));
  double last = 0;
  for (const SolverProgress& p : reports) {
    EXPECT_EQ(p.planner, "joint");
    EXPECT_EQ(p.time_limit_s, 30);
    EXPECT_TRUE(p.stage == "makespan" || p.stage == "splits") << p.stage;
    EXPECT_GE(p.elapsed_s, last);
    last = p.elapsed_s;
  }
  auto dflt = RunPlanner(**FindPlanner("joint-binary"), batch, cost, {});
  ASSERT_TRUE(dflt.ok()) << dflt.status().ToString();
  EXPECT_EQ(dflt->plan.stats.time_limit_s, kJointTimeLimitS);
  // Within the limit and proven: no deadline hit, the gap within the requested 1e-6.
  if (!dflt->plan.stats.deadline_hit) {
    EXPECT_LE(dflt->plan.solver_gap, 1e-6);
  }
}

TEST(ZelligePlannerTest, BadOptionsAreRejected) {
  AnalyticCostModel cost(testing::TinyCluster(1, 2), testing::TinyModel(1));
  workload::Batch b = MakeBatch({1000, 200});
  auto run = RunPlanner(**FindPlanner("zellige"), b, cost, {{"zellige.time_limit_s", "-1"}});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("zellige.time_limit_s: got '-1'"), std::string::npos);
  // Numbers with junk around them (strtod once took " 5", "5 " was refused, "0x10" was 16).
  for (const char* bad : {" 5", "5 ", "0x10", "5s", "", "nan", "inf", "1e400", "2e6"}) {
    auto r = PositiveOption({{"joint.time_limit_s", bad}}, "joint.time_limit_s", 60);
    ASSERT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_NE(r.status().message().find("joint.time_limit_s: got '"), std::string::npos);
  }
  EXPECT_EQ(*PositiveOption({{"joint.time_limit_s", "2.5"}}, "joint.time_limit_s", 60), 2.5);
  EXPECT_EQ(*PositiveOption({}, "joint.time_limit_s", 60), 60);
}

}  // namespace
}  // namespace tessera::zellige
