// Differential test: AnalyticCostModel and ProfileCostModel against LegacyCostModel (the
// single-class CostModel with an `if (profile_)` switch they replaced, kept verbatim in
// testdata/legacy_cost_model.h) on seeded random clusters, models, profiles, sequences,
// configs and rank sets. Every number must agree bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "core/units.h"
#include "zellige/cost_model.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/cost_model_profile.h"
#include "zellige/testdata/legacy_cost_model.h"

namespace tessera::zellige {
namespace {

using legacy::LegacyCostModel;

constexpr int kTrials = 200;
constexpr int kQueriesPerTrial = 40;

// Bit-for-bit equality of doubles (distinguishes -0 from +0, compares NaN payloads).
::testing::AssertionResult SameBits(const char* got_expr, const char* want_expr, double got,
                                    double want) {
  if (std::bit_cast<uint64_t>(got) == std::bit_cast<uint64_t>(want)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << got_expr << " = " << got << " differs from " << want_expr << " = " << want;
}
#define EXPECT_SAME(got, want) EXPECT_PRED_FORMAT2(SameBits, got, want)

int Pick(core::Rng& rng, const std::vector<int>& values) {
  return values[rng.Below(values.size())];
}

hw::Cluster RandomCluster(core::Rng& rng) {
  hw::Cluster c;
  c.name = "random";
  c.provenance = "test";
  c.device.name = "random-device";
  c.device.peak_flops.bf16 = rng.Uniform(1e9, 1e15);
  c.device.mem_bw_bytes_per_s = rng.Uniform(1e9, 1e12);
  c.device.memory_bytes = rng.Uniform(1, 100) * core::kGiB;
  c.device.memory_usable_fraction = rng.Uniform(0.5, 1.0);
  c.device.compute_efficiency = rng.Uniform(0.1, 1.0);
  c.nodes = Pick(rng, {1, 1, 2, 3, 4});
  c.ranks_per_node = Pick(rng, {1, 2, 4, 8});
  c.intra = {"intra", rng.Uniform(1e8, 1e11), rng.Below(2) ? 0.0 : rng.Uniform(0, 1e-4)};
  c.inter = {"inter", rng.Uniform(1e7, 1e10), rng.Below(2) ? 0.0 : rng.Uniform(0, 1e-3)};
  return c;
}

models::DitModel RandomModel(core::Rng& rng) {
  const int heads = Pick(rng, {1, 2, 4, 8, 12, 16});
  const int head_dim = Pick(rng, {16, 64, 128});
  return models::DitModel{"random",
                          heads * head_dim,
                          heads,
                          Pick(rng, {1, 2, 3, 30}),
                          Pick(rng, {64, 1024, 8960}),
                          Pick(rng, {0, 0, 77, 512}),
                          Pick(rng, {2, 4})};
}

// A random distinct set of `degree` ranks of `n`.
std::vector<int> RandomRanks(core::Rng& rng, int n, int degree) {
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  for (int i = n - 1; i > 0; --i) std::swap(all[i], all[rng.Below(i + 1)]);
  all.resize(degree);
  return all;
}

// A random power-of-two degree <= n and one of its configs for `heads`.
ParallelConfig RandomConfig(core::Rng& rng, int n, int heads) {
  std::vector<int> degrees;
  for (int d = 1; d <= n; d *= 2) degrees.push_back(d);
  const std::vector<ParallelConfig> configs = ConfigsOfDegree(Pick(rng, degrees), heads);
  return configs[rng.Below(configs.size())];
}

int64_t RandomTokens(core::Rng& rng) {
  const int64_t scales[] = {1, 100, 10'000, 1'000'000};
  return 1 + static_cast<int64_t>(rng.Below(scales[rng.Below(4)]));
}

// A random profile: 1..8 ranks, fits with intercepts of either sign, sometimes contention,
// rank factors and a point-to-point fit, sometimes missing a measured config.
Profile RandomProfile(core::Rng& rng) {
  Profile p;
  p.provenance = "random test profile";
  p.machine = "random";
  p.date = "2025-01-01";
  p.ranks = Pick(rng, {1, 2, 4, 8});
  p.repeats = 1;
  const int heads = Pick(rng, {2, 4, 8});
  const int head_dim = Pick(rng, {16, 64});
  p.model = ProfileModel{16,       heads * head_dim,     heads,
                         head_dim, Pick(rng, {1, 2, 4}), Pick(rng, {256, 1024})};
  p.step_overhead_s = rng.Uniform(0, 0.1);
  p.base_bytes = rng.Uniform(0, 1e9);
  p.usable_bytes_per_rank = rng.Uniform(1e9, 1e11);
  p.solo_speedup = rng.Below(3) == 0 ? 1.0 : rng.Uniform(kMinSpeedFactor, kMaxSpeedFactor);
  if (rng.Below(2) == 0) {
    for (int r = 0; r < p.ranks; ++r) {
      p.rank_time_factors.push_back(rng.Uniform(kMinSpeedFactor, kMaxSpeedFactor));
    }
  }
  for (int d = 1; d <= p.ranks; d *= 2) {
    for (const ParallelConfig& c : ConfigsOfDegree(d, heads)) {
      ConfigPrices cp;
      cp.config = c;
      cp.fwd_fit = {rng.Uniform(-1e-3, 1e-2), rng.Uniform(-1e-7, 1e-5), rng.Uniform(0, 1e-9)};
      cp.bwd_fit = {rng.Uniform(-1e-3, 1e-2), rng.Uniform(-1e-7, 1e-5), rng.Uniform(0, 1e-9)};
      cp.mem_fit = {rng.Uniform(-1e5, 1e6), rng.Uniform(0, 1e5)};
      cp.points.push_back({1024, 1, EvalQuadratic(cp.fwd_fit, 1024),
                           EvalQuadratic(cp.bwd_fit, 1024), EvalLine(cp.mem_fit, 1024)});
      p.configs.push_back(cp);
    }
  }
  if (p.configs.size() > 1 && rng.Below(4) == 0) {
    p.configs.erase(p.configs.begin() + static_cast<int64_t>(rng.Below(p.configs.size())));
  }
  if (rng.Below(2) == 0) {
    CommFit f;
    f.primitive = "p2p";
    f.ranks = 2;
    f.alpha_s = rng.Uniform(1e-6, 1e-4);
    f.beta_s_per_byte = rng.Uniform(1e-11, 1e-9);
    p.comm.push_back(f);
  }
  return p;
}

void ExpectSameCost(const SeqCost& got, const SeqCost& want) {
  EXPECT_SAME(got.fwd_s, want.fwd_s);
  EXPECT_SAME(got.bwd_s, want.bwd_s);
  EXPECT_SAME(got.compute_s, want.compute_s);
  EXPECT_SAME(got.comm_s, want.comm_s);
  EXPECT_SAME(got.comm_bytes, want.comm_bytes);
  EXPECT_SAME(got.mem_bytes, want.mem_bytes);
}

// Everything that does not depend on a sequence.
void ExpectSameModelWide(const CostModel& got, const LegacyCostModel& want) {
  EXPECT_EQ(got.cluster().name, want.cluster().name);
  EXPECT_EQ(got.cluster().num_ranks(), want.cluster().num_ranks());
  EXPECT_EQ(got.model().hidden, want.model().hidden);
  EXPECT_EQ(got.model().layers, want.model().layers);
  EXPECT_EQ(got.options().ideal, want.options().ideal);
  EXPECT_EQ(got.profile(), want.profile());
  EXPECT_SAME(got.BaseMemoryBytes(), want.BaseMemoryBytes());
  EXPECT_SAME(got.MemoryCapacityBytes(), want.MemoryCapacityBytes());
  EXPECT_SAME(got.StepOverheadS(), want.StepOverheadS());
  EXPECT_EQ(got.HasContention(), want.HasContention());
  const int n = want.cluster().num_ranks();
  for (int busy = 0; busy <= n + 1; ++busy) {
    EXPECT_SAME(got.ContentionSpeed(busy), want.ContentionSpeed(busy)) << busy;
  }
  EXPECT_SAME(got.RankTimeFactor({}), want.RankTimeFactor({}));
  if (!want.Supports(ParallelConfig{}).ok()) return;  // WholeTime would CHECK-fail
  for (int tokens : {1, 4096, 100'000}) {
    EXPECT_SAME(got.WholeTime(tokens), want.WholeTime(tokens));
  }
}

// One random sequence, config and rank set.
void ExpectSameQuery(core::Rng& rng, const CostModel& got, const LegacyCostModel& want) {
  const int n = want.cluster().num_ranks();
  const ParallelConfig c = RandomConfig(rng, n, want.model().heads);
  const std::vector<int> ranks = RandomRanks(rng, n, c.degree());
  const int64_t tokens = RandomTokens(rng);
  SCOPED_TRACE(c.ToString() + " tokens " + std::to_string(tokens));
  const core::Status got_ok = got.Supports(c), want_ok = want.Supports(c);
  EXPECT_EQ(got_ok.code(), want_ok.code());
  EXPECT_EQ(got_ok.message(), want_ok.message());
  const auto [got_fwd, got_bwd] = got.SegmentSharedS(c);
  const auto [want_fwd, want_bwd] = want.SegmentSharedS(c);
  EXPECT_SAME(got_fwd, want_fwd);
  EXPECT_SAME(got_bwd, want_bwd);
  EXPECT_SAME(got.RankTimeFactor(ranks), want.RankTimeFactor(ranks));
  const double local = static_cast<double>(tokens) / c.degree();
  EXPECT_SAME(got.LinearFlopsPerLayer(local), want.LinearFlopsPerLayer(local));
  EXPECT_SAME(got.AttentionFlopsPerLayer(static_cast<double>(tokens), c.degree()),
              want.AttentionFlopsPerLayer(static_cast<double>(tokens), c.degree()));
  if (!want_ok.ok()) return;  // unmeasured configs are not priced (CHECK)
  EXPECT_SAME(got.MemoryBytes(tokens, c), want.MemoryBytes(tokens, c));
  ExpectSameCost(got.Cost(tokens, c, ranks), want.Cost(tokens, c, ranks));
}

TEST(CostModelDifferentialTest, AnalyticMatchesLegacy) {
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    core::Rng rng(0xC057 + trial);
    const hw::Cluster cluster = RandomCluster(rng);
    const models::DitModel model = RandomModel(rng);
    const CostModelOptions options{.ideal = rng.Below(4) == 0};
    const LegacyCostModel want(cluster, model, options);
    const AnalyticCostModel direct(cluster, model, options);
    const std::unique_ptr<CostModel> made = MakeAnalyticCostModel(cluster, model, options);
    for (const CostModel* got : std::vector<const CostModel*>{&direct, made.get()}) {
      ExpectSameModelWide(*got, want);
      core::Rng queries = rng.Fork(1);
      for (int i = 0; i < kQueriesPerTrial; ++i) ExpectSameQuery(queries, *got, want);
    }
  }
}

TEST(CostModelDifferentialTest, ProfilePricedMatchesLegacy) {
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    core::Rng rng(0x9F0F + trial);
    const auto profile = std::make_shared<const Profile>(RandomProfile(rng));
    // The legacy model ignored the ideal option with a profile; pass either.
    const LegacyCostModel want(profile, {.ideal = rng.Below(2) == 0});
    const ProfileCostModel direct(profile);
    const std::unique_ptr<CostModel> made = MakeProfileCostModel(profile);
    for (const CostModel* got : std::vector<const CostModel*>{&direct, made.get()}) {
      ExpectSameModelWide(*got, want);
      core::Rng queries = rng.Fork(2);
      for (int i = 0; i < kQueriesPerTrial; ++i) ExpectSameQuery(queries, *got, want);
    }
  }
}

// The profile-priced model's cluster and model are the profile's views, as before.
TEST(CostModelDifferentialTest, ProfileClusterAndModelMatchLegacy) {
  core::Rng rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const auto profile = std::make_shared<const Profile>(RandomProfile(rng));
    const LegacyCostModel want(profile);
    const ProfileCostModel got(profile);
    EXPECT_EQ(got.cluster().name, want.cluster().name);
    EXPECT_EQ(got.cluster().provenance, want.cluster().provenance);
    EXPECT_SAME(got.cluster().intra.bw_bytes_per_s, want.cluster().intra.bw_bytes_per_s);
    EXPECT_SAME(got.cluster().inter.latency_s, want.cluster().inter.latency_s);
    EXPECT_SAME(got.cluster().usable_memory_bytes(), want.cluster().usable_memory_bytes());
    EXPECT_EQ(got.model().name, want.model().name);
    EXPECT_EQ(got.model().ffn, want.model().ffn);
    EXPECT_EQ(got.model().text_tokens, want.model().text_tokens);
    EXPECT_EQ(got.model().bytes_per_elem, want.model().bytes_per_elem);
  }
}

}  // namespace
}  // namespace tessera::zellige
