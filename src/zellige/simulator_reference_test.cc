// Differential test: Simulate (scheduling on sim::Simulator) against SimulateReference (the
// plain loops) on seeded random plans and batches, analytic and profile-priced, with and
// without contention and per-rank time factors.
#include "zellige/simulator_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "core/rng.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/cost_model_profile.h"
#include "zellige/profile.h"
#include "zellige/simulator.h"
#include "zellige/test_fixtures.h"

namespace tessera::zellige {
namespace {

using testing::MakeBatch;

// An 8-rank profile pricing every config of degree 1, 2, 4, 8 (4 heads); split configs cost
// less per token as the degree grows and carry a per-segment intercept.
Profile EightRankProfile(double solo_speedup, std::vector<double> factors) {
  Profile p;
  p.provenance = "hand-made test profile";
  p.machine = "test";
  p.date = "2025-01-01";
  p.ranks = 8;
  p.repeats = 1;
  p.model = ProfileModel{16, 256, 4, 64, 3, 1024};
  p.step_overhead_s = 0.01;
  p.base_bytes = 5e7;
  p.usable_bytes_per_rank = 4e9;
  p.solo_speedup = solo_speedup;
  p.rank_time_factors = std::move(factors);
  for (int d : {1, 2, 4, 8}) {
    for (const ParallelConfig& c : ConfigsOfDegree(d, 4)) {
      ConfigPrices cp;
      cp.config = c;
      const double a = d == 1 ? 0 : 1e-3 * (1 + 0.1 * c.h);
      cp.fwd_fit = {a, 2e-6 / d, 1e-10 / d};
      cp.bwd_fit = {2 * a, 4e-6 / d, 2.5e-10 / d};
      cp.mem_fit = {1e5, 20000.0 / d};
      for (int64_t L : {256, 1024, 4096}) {
        const double l = static_cast<double>(L);
        cp.points.push_back({L, 1, EvalQuadratic(cp.fwd_fit, l), EvalQuadratic(cp.bwd_fit, l),
                             EvalLine(cp.mem_fit, l)});
      }
      p.configs.push_back(cp);
    }
  }
  return p;
}

// A random plan: each sequence gets a random degree, config and rank set; about one in four
// split sequences reuses an earlier split's config and ranks (one engine segment).
Plan RandomPlan(core::Rng& rng, int n, int seqs, int heads) {
  Plan plan{"random", n, {}};
  std::vector<std::pair<ParallelConfig, std::vector<int>>> splits;
  for (int s = 0; s < seqs; ++s) {
    if (!splits.empty() && rng.Below(4) == 0) {
      const auto& [c, ranks] = splits[rng.Below(splits.size())];
      plan.placements.push_back({s, c, ranks});
      continue;
    }
    const int degrees[] = {1, 1, 1, 2, 4, 8};
    const int d = std::min(n, degrees[rng.Below(6)]);
    const std::vector<ParallelConfig> configs = ConfigsOfDegree(d, heads);
    const ParallelConfig c = configs[rng.Below(configs.size())];
    std::vector<int> all(n);
    std::iota(all.begin(), all.end(), 0);
    for (int i = n - 1; i > 0; --i) std::swap(all[i], all[rng.Below(i + 1)]);
    all.resize(d);
    plan.placements.push_back({s, c, all});
    if (!c.whole()) splits.push_back({c, all});
  }
  // Placement order is not issue order: shuffle it.
  for (size_t i = plan.placements.size(); i > 1; --i)
    std::swap(plan.placements[i - 1], plan.placements[rng.Below(i)]);
  return plan;
}

void ExpectSame(const SimResult& got, const SimResult& want, int trial) {
  const double tol = 1e-9 * want.makespan_s;
  EXPECT_NEAR(got.makespan_s, want.makespan_s, tol) << trial;
  ASSERT_EQ(got.finish_s.size(), want.finish_s.size());
  for (size_t r = 0; r < want.finish_s.size(); ++r) {
    EXPECT_NEAR(got.finish_s[r], want.finish_s[r], tol) << trial << " rank " << r;
    EXPECT_NEAR(got.busy_s[r], want.busy_s[r], tol) << trial << " rank " << r;
    EXPECT_EQ(got.mem_bytes[r], want.mem_bytes[r]) << trial;
  }
  EXPECT_EQ(got.feasible, want.feasible);
  EXPECT_EQ(got.infeasible_reason, want.infeasible_reason);
  EXPECT_EQ(got.attn_comm_bytes, want.attn_comm_bytes);
  EXPECT_EQ(got.split_sequences, want.split_sequences);
}

TEST(SimulatorReferenceTest, AnalyticMatchesReferenceExactly) {
  core::Rng rng(11);
  AnalyticCostModel cm(testing::TinyCluster(2, 4), testing::TinyModel(3));
  for (int trial = 0; trial < 100; ++trial) {
    const int seqs = 1 + static_cast<int>(rng.Below(30));
    std::vector<int64_t> tokens;
    for (int s = 0; s < seqs; ++s) tokens.push_back(8 + static_cast<int64_t>(rng.Below(8000)));
    const workload::Batch b = MakeBatch(tokens);
    const Plan plan = RandomPlan(rng, 8, seqs, 4);
    core::TraceWriter t1, t2;
    auto got = Simulate(plan, b, cm, &t1);
    auto want = SimulateReference(plan, b, cm, &t2);
    ASSERT_TRUE(got.ok() && want.ok()) << got.status().ToString() << want.status().ToString();
    ExpectSame(*got, *want, trial);
    // Same list schedule, same arithmetic: identical to the bit, trace included.
    EXPECT_EQ(got->makespan_s, want->makespan_s) << trial;
    EXPECT_EQ(got->finish_s, want->finish_s) << trial;
    EXPECT_EQ(t1.ToJson().dump(), t2.ToJson().dump()) << trial;
  }
}

TEST(SimulatorReferenceTest, ProfileWithContentionAndRankFactorsMatchesReference) {
  core::Rng rng(23);
  for (int trial = 0; trial < 300; ++trial) {
    const double speedups[] = {1.0, 1.0 + 1e-12, 1.08, 1.6, 0.8};
    std::vector<double> factors;
    if (rng.Below(2)) {
      for (int r = 0; r < 8; ++r) factors.push_back(0.8 + 0.05 * static_cast<double>(rng.Below(9)));
    }
    ProfileCostModel cm(std::make_shared<const Profile>(
        EightRankProfile(speedups[rng.Below(5)], std::move(factors))));
    const int seqs = 1 + static_cast<int>(rng.Below(30));
    std::vector<int64_t> tokens;
    for (int s = 0; s < seqs; ++s) tokens.push_back(8 + static_cast<int64_t>(rng.Below(6000)));
    const workload::Batch b = MakeBatch(tokens);
    const Plan plan = RandomPlan(rng, 8, seqs, 4);
    core::TraceWriter t1, t2;
    auto got = Simulate(plan, b, cm, &t1);
    auto want = SimulateReference(plan, b, cm, &t2);
    ASSERT_TRUE(got.ok() && want.ok()) << got.status().ToString() << want.status().ToString();
    ExpectSame(*got, *want, trial);
    EXPECT_EQ(t1.size(), t2.size()) << trial;
  }
}

TEST(SimulatorReferenceTest, ErrorsMatchReference) {
  AnalyticCostModel cm(testing::TinyCluster(1, 4), testing::TinyModel(1));
  const workload::Batch b = MakeBatch({100, 100});
  const Plan bad{"x", 4, {{0, {}, {0}}, {0, {}, {1}}, {1, {}, {2}}}};
  EXPECT_EQ(Simulate(bad, b, cm).status().message(),
            SimulateReference(bad, b, cm).status().message());
}

}  // namespace
}  // namespace tessera::zellige
