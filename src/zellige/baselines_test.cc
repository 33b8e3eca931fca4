#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/rng.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/evaluate.h"
#include "zellige/karmarkar_karp.h"
#include "zellige/knapformer_planner.h"
#include "zellige/planner.h"
#include "zellige/test_fixtures.h"

namespace tessera::zellige {
namespace {

workload::Batch RandomBatch(core::Rng& rng, int n_ranks, int max_seqs) {
  workload::Batch b;
  b.name = "random";
  int n = 1 + static_cast<int>(rng.Below(max_seqs));
  for (int i = 0; i < n; ++i) {
    workload::Sequence s;
    s.id = i;
    // Log-uniform in [max(100, N), 500000].
    s.tokens = static_cast<int64_t>(std::exp(rng.Uniform(std::log(100.0), std::log(500000.0))));
    s.tokens = std::max<int64_t>(s.tokens, n_ranks);
    b.sequences.push_back(s);
  }
  return b;
}

workload::Batch BatchOfLengths(const std::vector<int64_t>& lengths) {
  workload::Batch b;
  for (int64_t L : lengths) {
    workload::Sequence s;
    s.id = static_cast<int>(b.sequences.size());
    s.tokens = L;
    b.sequences.push_back(s);
  }
  return b;
}

int LargestGroup(const std::string& planner, int n) {
  if (planner == "usp") return n;
  if (planner == "knapformer") {
    int g = 0;
    auto bags = ParseBagSpec(DefaultBagSpec(n), n);
    for (const auto& bag : *bags) g = std::max(g, bag.size);
    return g;
  }
  return 1;  // dp, adaptiveload
}

// Theorem 1 (zellige.md): with no communication cost and no memory limit, a disjoint-group
// placement has max(1, (N/g_max) phi) <= Gamma <= N/g_max, Gamma = N T / W, phi = w_max / W.
TEST(BaselinesTest, TheoremOneBoundsHoldForDisjointGroupBaselines) {
  core::Rng rng(2026);
  int checked = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    const int nodes = 1 + static_cast<int>(rng.Below(2));
    const int per_node = 1 << (1 + rng.Below(3));  // 2, 4, 8
    const int n = nodes * per_node;
    AnalyticCostModel cm(testing::TinyCluster(nodes, per_node),
                         *models::DitModelPreset("wan2.1-1.3b"), {.ideal = true});
    workload::Batch batch = RandomBatch(rng, n, 40);
    std::vector<double> w = WholeTimes(batch, cm);
    const double W = std::accumulate(w.begin(), w.end(), 0.0);
    const double phi = *std::max_element(w.begin(), w.end()) / W;
    for (const auto& e : PlannerRegistry()) {
      if (!e.disjoint_groups) continue;
      auto run = RunPlanner(e, batch, cm, {});
      ASSERT_TRUE(run.ok()) << e.name << ": " << run.status().ToString();
      const double gamma = n * run->sim.makespan_s / W;
      const int g_max = LargestGroup(e.name, n);
      const double lower = std::max(1.0, static_cast<double>(n) / g_max * phi);
      const double upper = static_cast<double>(n) / g_max;
      EXPECT_GE(gamma, lower * (1 - 1e-9)) << e.name << " trial " << trial;
      EXPECT_LE(gamma, upper * (1 + 1e-9)) << e.name << " trial " << trial << " N=" << n;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4000);
}

TEST(BaselinesTest, UspIsPerfectlyBalancedWithoutCommunication) {
  AnalyticCostModel cm(testing::TinyCluster(2, 4), *models::DitModelPreset("wan2.1-1.3b"),
                       {.ideal = true});
  core::Rng rng(5);
  workload::Batch b = RandomBatch(rng, 8, 20);
  auto run = RunPlanner(**FindPlanner("usp"), b, cm, {});
  ASSERT_TRUE(run.ok());
  EXPECT_NEAR(run->sim.max_over_mean, 1.0, 1e-12);
  // 12 heads: Ulysses degree 4 (divides 12 and the 4 ranks per node), ring 2 across nodes.
  EXPECT_EQ(run->plan.placements[0].config, (ParallelConfig{1, 4, 2}));
}

TEST(BaselinesTest, KnapFormerGreedyWorkedByHand) {
  // Bags g2n1+g1n2 over 4 ranks in KnapFormer's order (increasing size): bag 0 = rank {0},
  // bag 1 = {1}, bag 2 = ranks {2, 3}.
  auto bags = ParseBagSpec("g2n1+g1n2", 4);
  ASSERT_TRUE(bags.ok());
  ASSERT_EQ(bags->size(), 3u);
  EXPECT_EQ((*bags)[0].first_rank, 0);
  EXPECT_EQ((*bags)[0].size, 1);
  EXPECT_EQ((*bags)[1].first_rank, 1);
  EXPECT_EQ((*bags)[2].first_rank, 2);
  EXPECT_EQ((*bags)[2].size, 2);
  // W = 16, capacity per rank 4: bag capacities 4, 4, 8.
  // 8 -> only bag 2 can hold it (occ 1); 4 -> bags 0, 1 at occ 0: bag 0 (ties: lower number);
  // 2 -> bag 1 (occ 0.5); 2 -> bag 1 (occ 1).
  EXPECT_EQ(KnapFormerAssign({8, 4, 2, 2}, {1000, 1000, 1000, 1000}, *bags),
            (std::vector<int>{2, 0, 1, 1}));
  // Input order does not matter: the greedy sorts by workload (ties keep input order).
  EXPECT_EQ(KnapFormerAssign({2, 8, 2, 4}, {1000, 1000, 1000, 1000}, *bags),
            (std::vector<int>{1, 2, 1, 0}));
  // A sequence heavier than every bag's capacity (5.5, 5.5, 11) goes to the largest bags.
  EXPECT_EQ(KnapFormerAssign({20, 1, 1}, {1000, 1000, 1000}, *bags), (std::vector<int>{2, 0, 1}));
  // Bag size <= L: four unit workloads (capacities 1, 1, 2): bags 0, 1, 2, 2; with the last
  // sequence 1 token long it cannot go to bag 2: bags 0 and 1 tie at occupancy 1, so bag 0.
  EXPECT_EQ(KnapFormerAssign({1, 1, 1, 1}, {1000, 1000, 1000, 1000}, *bags),
            (std::vector<int>{0, 1, 2, 2}));
  EXPECT_EQ(KnapFormerAssign({1, 1, 1, 1}, {1000, 1000, 1000, 1}, *bags),
            (std::vector<int>{0, 1, 2, 0}));
}

// The spec's order does not matter: KnapFormer sorts sizes ascending and breaks occupancy
// ties toward the smaller bag. The earlier port laid bags out in spec order (largest first)
// and sent the first sequence of this batch to the 2-rank bag at ranks {0, 1}; the original
// sends it to the 1-rank bag at rank 0.
TEST(BaselinesTest, KnapFormerTieRuleIsTheOriginals) {
  for (const char* spec : {"g2n1+g1n1", "g1n1+g2n1"}) {
    auto bags = ParseBagSpec(spec, 3);
    ASSERT_TRUE(bags.ok()) << spec;
    ASSERT_EQ(bags->size(), 2u);
    EXPECT_EQ((*bags)[0].size, 1) << spec;
    EXPECT_EQ((*bags)[1].first_rank, 1) << spec;
    // Capacities 1 and 2 (W = 3): seq 0 ties at occupancy 0 -> bag 0 (rank 0); seq 1 -> bag 1
    // (occupancy 0 < 1); seq 2 -> bag 1 (0.5 < 1).
    EXPECT_EQ(KnapFormerAssign({1, 1, 1}, {100, 100, 100}, *bags), (std::vector<int>{0, 1, 1}))
        << spec;
  }
  // Through the planner: the same batch's first sequence on rank 0 alone.
  AnalyticCostModel cm(testing::TinyCluster(1, 4), *models::DitModelPreset("wan2.1-1.3b"),
                       {.ideal = true});
  workload::Batch batch;
  for (int i = 0; i < 4; ++i) {
    workload::Sequence seq;
    seq.id = i;
    seq.tokens = 4096;
    batch.sequences.push_back(seq);
  }
  auto run = RunPlanner(**FindPlanner("knapformer"), batch, cm,
                        {{"knapformer.bags", "g2n1+g1n2"}, {"knapformer.gamma", "1"}});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  // Equal sequences, capacities 1, 1, 2 of the per-rank share: bags 0, 1, 2, 2.
  ASSERT_EQ(run->plan.placements.size(), 4u);
  EXPECT_EQ(run->plan.placements[0].ranks, (std::vector<int>{0}));
  EXPECT_EQ(run->plan.placements[1].ranks, (std::vector<int>{1}));
  EXPECT_EQ(run->plan.placements[2].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(run->plan.placements[3].ranks, (std::vector<int>{2, 3}));
}

// KnapFormer's workload_estimator to the last bit: (24 L d^2 + gamma 4 L^2 d) / 1e12 in its
// order (values printed by Python 3.11). Multiplied left to right as gamma * 4 * L * L * d,
// the L = 7524 term rounds one ulp lower (0.5303768481792).
TEST(BaselinesTest, KnapFormerWorkloadIsTheOriginalsToTheLastBit) {
  EXPECT_EQ(KnapFormerWorkload(77000, 1536, 1.0), 40.787755008);
  EXPECT_EQ(KnapFormerWorkload(84000, 1536, 1.0), 48.108404736);
  EXPECT_EQ(KnapFormerWorkload(7524, 1536, 0.3), 0.5303768481792001);
  EXPECT_NE(KnapFormerWorkload(7524, 1536, 0.3), 0.5303768481792);
}

// Near-ties decided by the order of accumulation, worked by hand in doubles. Two 1-rank bags
// (g1n2). Occupancy is a running sum of per-sequence ratios: with workloads 5, 3, 2, 2
// (total 12, capacities 6 and 6): 5 -> bag 0, occupancy 5/6 = 7505999378950827 x 2^-53;
// 3 -> bag 1 (0.5); 2 -> bag 1: 0.5 + 1/3 lies halfway between two doubles and rounds to
// even, 7505999378950826 x 2^-53, one ulp below 5/6; so the last 2 goes to bag 1 too. As
// (sum of workloads) / capacity both bags would hold 5/6, a tie, and it would go to bag 0.
TEST(BaselinesTest, KnapFormerOccupancyIsASumOfRatios) {
  auto bags = ParseBagSpec("g1n2", 2);
  ASSERT_TRUE(bags.ok());
  EXPECT_EQ(KnapFormerAssign({5, 3, 2, 2}, {1000, 1000, 1000, 1000}, *bags),
            (std::vector<int>{0, 1, 1, 1}));
}

// The total is summed in input order. 2.0 + 0.5 + 0.9 + 2.3 + 1.2 + 0.3 from the left is
// 7.199999999999999 (capacity 3.5999999999999996 per bag); in descending order it is 7.2.
// By workload: 2.3 -> bag 0, 2.0 -> bag 1, 1.2 -> bag 1, 0.9 -> bag 0; then bag 0 holds
// 2.3/c + 0.9/c = 0.8888888888888891 and bag 1 2.0/c + 1.2/c = 0.888888888888889, so 0.5
// -> bag 1 and 0.3 -> bag 0. With c = 3.6 both bags hold 0.8888888888888888: a tie, 0.5 ->
// bag 0 and 0.3 -> bag 1.
TEST(BaselinesTest, KnapFormerTotalIsSummedInInputOrder) {
  auto bags = ParseBagSpec("g1n2", 2);
  ASSERT_TRUE(bags.ok());
  EXPECT_EQ(KnapFormerAssign({2.0, 0.5, 0.9, 2.3, 1.2, 0.3}, std::vector<int64_t>(6, 1000), *bags),
            (std::vector<int>{1, 1, 0, 0, 1, 0}));
}

// A three-way near-tie that the workload's units decide, as KnapFormer's own balancer does
// (its SequenceBalancer.plan_routing, run on this batch, gives these bags). g2n1+g1n2 on 4
// ranks: bags {0}, {1}, {2, 3}; d = 1536, gamma 1: w(84000) = 48.108404736, w(77000) =
// 40.787755008, per-rank capacity c = 99.093098496. The four 84000s go to bags 0, 1, 2, 2
// and all three bags hold 0.48548693568141826; the first four 77000s go to bags 0, 1, 2, 2
// and all three hold 0.8970973871362836 (bag 2 as four halves, bags 0 and 1 as two wholes):
// a tie, so the last 77000 goes to bag 0. The earlier port summed unscaled workloads
// (24 L d^2 + ..., no / 1e12), where bag 2 ended one ulp lower, and sent it to ranks {2, 3}.
TEST(BaselinesTest, KnapFormerNearTieIsBrokenAsTheOriginal) {
  const std::vector<int64_t> lengths = {77000, 84000, 84000, 84000, 77000,
                                        77000, 84000, 77000, 77000};
  const std::vector<int> original = {0, 0, 1, 2, 1, 2, 2, 2, 0};
  auto bags = ParseBagSpec("g2n1+g1n2", 4);
  ASSERT_TRUE(bags.ok());
  std::vector<double> w;
  for (int64_t L : lengths) w.push_back(KnapFormerWorkload(L, 1536, 1.0));
  EXPECT_EQ(KnapFormerAssign(w, lengths, *bags), original);

  AnalyticCostModel cm(testing::TinyCluster(1, 4), *models::DitModelPreset("wan2.1-1.3b"),
                       {.ideal = true});
  ASSERT_EQ(cm.model().hidden, 1536);
  auto run = RunPlanner(**FindPlanner("knapformer"), BatchOfLengths(lengths), cm,
                        {{"knapformer.bags", "g2n1+g1n2"}, {"knapformer.gamma", "1"}});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const std::vector<int> first_rank_of_bag = {0, 1, 2};
  ASSERT_EQ(run->plan.placements.size(), lengths.size());
  for (const Placement& p : run->plan.placements) {
    EXPECT_EQ(p.ranks.front(), first_rank_of_bag[original[p.seq]]) << "sequence " << p.seq;
  }
}

// When no bag qualifies, KnapFormer sorts its own list of the largest bags by occupancy in
// place, so a later tie there goes to the bag that came first last time, not to the lowest
// number. g2n2 (bags {0, 1} and {2, 3}), workloads 8, 8, 1, 1, 1, 1 (capacities 10 and 10),
// the 1s one token long (shorter than every bag): 8 -> bag 0, 8 -> bag 1; the 1s fall back
// to the list [0, 1]: tie at 0.8 -> bag 0; sorted to [1, 0] -> bag 1; tie at 0.9, the list
// stays [1, 0] -> bag 1; sorted to [0, 1] -> bag 0. KnapFormer's balancer puts lengths 100,
// 100, 1, 1, 1, 1 (d = 1536, gamma 1) in these bags too.
TEST(BaselinesTest, KnapFormerFallbackKeepsItsOrder) {
  auto bags = ParseBagSpec("g2n2", 4);
  ASSERT_TRUE(bags.ok());
  const std::vector<int64_t> lengths = {100, 100, 1, 1, 1, 1};
  const std::vector<int> original = {0, 1, 0, 1, 1, 0};
  EXPECT_EQ(KnapFormerAssign({8, 8, 1, 1, 1, 1}, lengths, *bags), original);

  AnalyticCostModel cm(testing::TinyCluster(1, 4), *models::DitModelPreset("wan2.1-1.3b"),
                       {.ideal = true});
  auto run = RunPlanner(**FindPlanner("knapformer"), BatchOfLengths(lengths), cm,
                        {{"knapformer.bags", "g2n2"}, {"knapformer.gamma", "1"}});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->plan.placements.size(), lengths.size());
  for (const Placement& p : run->plan.placements) {
    EXPECT_EQ(p.ranks.front(), 2 * original[p.seq]) << "sequence " << p.seq;
  }
}

TEST(BaselinesTest, BagSpecs) {
  EXPECT_EQ(DefaultBagSpec(16), "g8n1+g4n1+g2n1+g1n2");
  EXPECT_EQ(DefaultBagSpec(8), "g4n1+g2n1+g1n2");
  auto sixteen = ParseBagSpec(DefaultBagSpec(16), 16);
  ASSERT_TRUE(sixteen.ok());
  std::vector<std::pair<int, int>> layout;  // (first rank, size)
  for (const Bag& b : *sixteen) layout.emplace_back(b.first_rank, b.size);
  EXPECT_EQ(layout, (std::vector<std::pair<int, int>>{{0, 1}, {1, 1}, {2, 2}, {4, 4}, {8, 8}}));
  EXPECT_TRUE(ParseBagSpec(DefaultBagSpec(64), 64).ok());
  EXPECT_FALSE(ParseBagSpec("g8n1", 16).ok());
  EXPECT_FALSE(ParseBagSpec("g8n3", 16).ok());
  EXPECT_FALSE(ParseBagSpec("x8n2", 16).ok());
  EXPECT_FALSE(ParseBagSpec("", 16).ok());
  EXPECT_FALSE(ParseBagSpec("g0n2", 16).ok());
  auto twice = ParseBagSpec("g1n1+g2n1+g1n1", 4);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("bag size 1 appears twice"), std::string::npos);
  EXPECT_NE(twice.status().message().find("g1n2"), std::string::npos);
  EXPECT_TRUE(ParseKnapFormerGamma("0.25").ok());
  for (const char* bad : {"0", "-1", "abc", "1x", "", "inf", "nan"}) {
    auto g = ParseKnapFormerGamma(bad);
    ASSERT_FALSE(g.ok()) << bad;
    EXPECT_NE(g.status().message().find("knapformer.gamma"), std::string::npos) << bad;
  }
}

TEST(BaselinesTest, KarmarkarKarpIsNearOptimalOnSmallInstances) {
  core::Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng.Below(8));
    const int ways = 2 + static_cast<int>(rng.Below(2));
    std::vector<double> w(n);
    for (auto& x : w) x = rng.Uniform(1, 100);
    std::vector<int> part = KarmarkarKarp(w, ways);
    std::vector<double> sums(ways, 0);
    for (int i = 0; i < n; ++i) {
      ASSERT_GE(part[i], 0);
      ASSERT_LT(part[i], ways);
      sums[part[i]] += w[i];
    }
    double kk = *std::max_element(sums.begin(), sums.end());
    // Brute force optimum.
    double best = 1e300;
    std::vector<int> a(n, 0);
    while (true) {
      std::vector<double> s(ways, 0);
      for (int i = 0; i < n; ++i) s[a[i]] += w[i];
      best = std::min(best, *std::max_element(s.begin(), s.end()));
      int i = 0;
      while (i < n && ++a[i] == ways) a[i++] = 0;
      if (i == n) break;
    }
    EXPECT_GE(kk, best - 1e-9);
    // KK's max part is within 4/3 of optimal plus the largest item on these sizes.
    EXPECT_LE(kk, best * 4.0 / 3.0 + 1e-9) << "trial " << trial;
  }
}

TEST(BaselinesTest, EveryPlannerPlacesEverySequenceOnAPreset) {
  for (const char* cluster : {"a800x8", "a800x16", "a6000x32"}) {
    AnalyticCostModel cm(*hw::ClusterPreset(cluster), *models::DitModelPreset("wan2.1-1.3b"));
    for (int mix : {35, 50, 60}) {
      auto batch = workload::GenerateBatch({mix, 175000, 15, cm.cluster().num_ranks(), 3});
      ASSERT_TRUE(batch.ok());
      for (const auto& e : PlannerRegistry()) {
        if (!e.in_all) continue;  // the exact references are tested elsewhere
        auto run = RunPlanner(e, *batch, cm, {});
        ASSERT_TRUE(run.ok()) << e.name << " " << cluster << ": " << run.status().ToString();
        EXPECT_EQ(run->plan.placements.size(), batch->sequences.size());
        EXPECT_GT(run->sim.makespan_s, 0);
        if (std::string(e.name) == "dynamic-cp" || std::string(e.name) == "zellige") {
          EXPECT_TRUE(run->sim.feasible) << cluster;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::zellige
