#include "zellige/profile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include "core/rng.h"
#include "zellige/cost_model.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/cost_model_profile.h"
#include "zellige/evaluate.h"
#include "zellige/planner_configs.h"
#include "zellige/simulator.h"
#include "zellige/test_fixtures.h"

namespace tessera::zellige {
namespace {

using testing::MakeBatch;

ConfigPrices Prices(ParallelConfig c, std::array<double, 3> fwd, std::array<double, 3> bwd,
                    std::array<double, 2> mem) {
  ConfigPrices p;
  p.config = c;
  for (int64_t L : {256, 1024, 4096}) {
    const double l = static_cast<double>(L);
    p.points.push_back({L, 1, fwd[0] + fwd[1] * l + fwd[2] * l * l,
                        bwd[0] + bwd[1] * l + bwd[2] * l * l, mem[0] + mem[1] * l});
  }
  p.fwd_fit = fwd;
  p.bwd_fit = bwd;
  p.mem_fit = mem;
  return p;
}

// 2 ranks, 4 heads: every config of degree 1 and 2. Numbers are made up (not measured).
Profile TinyProfile() {
  Profile p;
  p.provenance = "hand-made test profile";
  p.machine = "test-machine";
  p.date = "2025-01-01";
  p.ranks = 2;
  p.repeats = 3;
  p.model = ProfileModel{16, 256, 4, 64, 4, 1024};
  p.step_overhead_s = 0.01;
  p.base_bytes = 5e7;
  p.usable_bytes_per_rank = 4e9;
  p.configs = {
      Prices({1, 1, 1}, {1e-3, 2e-6, 1e-10}, {2e-3, 4e-6, 2.5e-10}, {0, 20000}),
      Prices({2, 1, 1}, {1.5e-3, 1.2e-6, 6e-11}, {3e-3, 2.4e-6, 1.5e-10}, {1e5, 12000}),
      Prices({1, 2, 1}, {1.2e-3, 1.1e-6, 5.5e-11}, {2.5e-3, 2.2e-6, 1.4e-10}, {1e5, 11000}),
      Prices({1, 1, 2}, {1.4e-3, 1.15e-6, 5.2e-11}, {2.8e-3, 2.3e-6, 1.3e-10}, {1e5, 11500})};
  p.comm = {{"p2p", 2, 2e-5, 1e-9, {{1024, 2.1024e-5}, {1048576, 1.068576e-3}}}};
  return p;
}

// Parses `j` and expects an error whose message contains `needle`.
void ExpectError(const core::Json& j, const std::string& needle) {
  auto p = ProfileFromJson(j, "p.json");
  ASSERT_FALSE(p.ok()) << needle;
  EXPECT_EQ(p.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find(needle), std::string::npos) << p.status().message();
  EXPECT_EQ(p.status().message().rfind("p.json: ", 0), 0u) << p.status().message();
}

TEST(ProfileTest, JsonRoundTrip) {
  const Profile p = TinyProfile();
  auto back = ProfileFromJson(ToJson(p), "mem");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, p);
  // Through text as well (doubles print so that they parse back exactly).
  auto text = core::ParseJson(ToJson(p).dump(), "text");
  ASSERT_TRUE(text.ok());
  auto back2 = ProfileFromJson(*text, "text");
  ASSERT_TRUE(back2.ok()) << back2.status().ToString();
  EXPECT_EQ(*back2, p);
  ASSERT_NE(p.Find({1, 2, 1}), nullptr);
  EXPECT_EQ(p.Find({1, 2, 1})->config, (ParallelConfig{1, 2, 1}));
  EXPECT_EQ(p.Find({1, 4, 1}), nullptr);
  // solo_speedup round-trips, and a profile written before the field existed means 1.
  Profile q = p;
  q.solo_speedup = 1.08;
  auto back3 = ProfileFromJson(ToJson(q), "solo");
  ASSERT_TRUE(back3.ok()) << back3.status().ToString();
  EXPECT_EQ(back3->solo_speedup, 1.08);
  core::Json old = ToJson(q);
  old.erase("solo_speedup");
  auto back4 = ProfileFromJson(old, "old");
  ASSERT_TRUE(back4.ok()) << back4.status().ToString();
  EXPECT_EQ(back4->solo_speedup, 1.0);
  EXPECT_TRUE(back4->rank_time_factors.empty());
  // Per-rank time factors round-trip; absent means none.
  q.rank_time_factors.assign(q.ranks, 1.0);
  q.rank_time_factors.back() = 1.125;
  auto back5 = ProfileFromJson(ToJson(q), "factors");
  ASSERT_TRUE(back5.ok()) << back5.status().ToString();
  EXPECT_EQ(back5->rank_time_factors, q.rank_time_factors);
}

TEST(ProfileTest, TestdataProfileLoads) {
  auto p = LoadProfile(std::string(TESSERA_ZELLIGE_TESTDATA) + "/profile_2rank.json");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->ranks, 2);
  EXPECT_EQ(p->configs.size(), 4u);
  EXPECT_EQ(p->model, TinyProfile().model);
}

TEST(ProfileTest, MalformedFieldsAreNamed) {
  const core::Json good = ToJson(TinyProfile());
  core::Json j = good;
  j["configs"][0]["points"][1]["fwd_s"] = -1;
  ExpectError(j, "configs[0].points[1].fwd_s: got -1, must be >= 0");
  j = good;
  j["kind"] = "tessera-cluster";
  ExpectError(j, "kind: got 'tessera-cluster', must be 'tessera-zellige-profile'");
  j = good;
  j["version"] = 2;
  ExpectError(j, "version: got 2, must be 1");
  j = good;
  j.erase("version");
  ExpectError(j, "version: missing required field");
  j = good;
  j["configs"].erase(2);  // (1,2,1)
  ExpectError(j, "configs: missing (1,2,1)");
  ExpectError(j, "measure the profile again at 2 ranks");
  j = good;
  j["configs"][1]["h"] = 3;  // (2,3,1): 3 does not divide 4 heads
  ExpectError(j, "configs[1]");
  j = good;
  j["configs"][1]["q"] = 4;  // degree 4 > 2 ranks
  ExpectError(j, "configs[1]: config (4,1,1) has degree 4, must be <= ranks (2)");
  j = good;
  j["configs"][3] = j["configs"][2];
  ExpectError(j, "configs[3]: config (1,2,1) appears twice");
  j = good;
  j["configs"][0]["fwd_fit"] = {1.0, 2.0};
  ExpectError(j, "configs[0].fwd_fit: got 2 coefficients, must be 3");
  j = good;
  j["configs"][0]["mem_fit"][1] = "x";
  ExpectError(j, "configs[0].mem_fit[1]: got \"x\", must be a finite number");
  j = good;
  j["configs"][0]["points"][2]["tokens"] = 256;
  ExpectError(j, "configs[0].points[2].tokens: got 256, must be > the previous point's 1024");
  j = good;
  j["model"]["head_dim"] = 32;
  ExpectError(j, "model.hidden: got 256, must equal heads * head_dim (128)");
  j = good;
  j["model"].erase("layers");
  ExpectError(j, "model.layers: missing required field");
  j = good;
  j["step_overhead_s"] = -0.5;
  ExpectError(j, "step_overhead_s: got -0.5, must be >= 0");
  j = good;
  j["usable_bytes_per_rank"] = 1e7;
  ExpectError(j, "usable_bytes_per_rank: got 1e+07, must be > base_bytes (5e+07)");
  j = good;
  j["ranks"] = 0;
  ExpectError(j, "ranks: got 0, must be >= 1");
  j = good;
  j["solo_speedup"] = 9;
  ExpectError(j, "solo_speedup: got 9, must be in [0.25, 8]");
  j = good;
  j["rank_time_factors"] = core::Json::array({1.0});
  ExpectError(j, "rank_time_factors: got 1 values, must have one per rank");
  j = good;
  j["rank_time_factors"] = core::Json::array();
  for (int r = 0; r < good["ranks"].get<int>(); ++r)
    j["rank_time_factors"].push_back(r == 0 ? 0.1 : 1.0);
  ExpectError(j, "rank_time_factors[0]: got 0.1, must be a number in [0.25, 8]");
  // Keys the format lacks are refused (a misspelt optional one used to be ignored).
  j = good;
  j["solo_speed_up"] = 0.5;
  ExpectError(j, "unknown key 'solo_speed_up', must be one of");
  j = good;
  j["configs"][0]["points"][0]["fwd"] = 1;
  ExpectError(j, "configs[0].points[0]: unknown key 'fwd'");
  j = good;
  j["comm"][0]["beta"] = 1;
  ExpectError(j, "comm[0]: unknown key 'beta'");
  j = good;
  j["comm"][0]["primitive"] = "broadcast";
  ExpectError(j, "comm[0].primitive: got 'broadcast'");
  j = good;
  j["comm"][0]["points"][0]["time_s"] = -1;
  ExpectError(j, "comm[0].points[0].time_s: got -1, must be >= 0");
  j = good;
  j["configs"] = 5;
  ExpectError(j, "configs: got number, must be an array");
  ExpectError(core::Json::array(), "must be an object");
}

TEST(ProfileTest, CheckProfileModelNamesBothValues) {
  const Profile p = TinyProfile();
  EXPECT_TRUE(CheckProfileModel(p, p.model, "profile.json").ok());
  ProfileModel want = p.model;
  want.head_dim = 128;
  want.hidden = 512;
  core::Status st = CheckProfileModel(p, want, "profile.json");
  EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "profile.json: model.hidden: measured for 256, asked for 512");
  want = p.model;
  want.head_dim = 128;
  EXPECT_EQ(CheckProfileModel(p, want, "profile.json").message(),
            "profile.json: model.head_dim: measured for 64, asked for 128");
}

// The fits themselves are core's (core/fit_test.cc); a profile evaluates them clamped at 0 so
// a fit never prices a sequence negative.
TEST(ProfileTest, EvaluatedFitsAreClampedAtZero) {
  const std::array<double, 3> f{2e-3, 3e-6, 4e-11};
  EXPECT_NEAR(EvalQuadratic(f, 2048), f[0] + f[1] * 2048 + f[2] * 2048 * 2048, 1e-12);
  EXPECT_DOUBLE_EQ(EvalLine({1e5, 12000}, 2), 1e5 + 24000);
  EXPECT_DOUBLE_EQ(EvalLine({-10, 1}, 3), 0);
  EXPECT_DOUBLE_EQ(EvalQuadratic({-1, 0, 0}, 100), 0);
}

TEST(ProfileTest, FitCommMatchesTheStoredFitAndRoundTrips) {
  const Profile p = TinyProfile();
  auto f = FitComm("p2p", 2, p.comm[0].points);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_NEAR(f->alpha_s, 2e-5, 1e-12);
  EXPECT_NEAR(f->beta_s_per_byte, 1e-9, 1e-18);
  EXPECT_EQ(f->points, p.comm[0].points);
  EXPECT_EQ(f->primitive, "p2p");
  Profile q = p;
  q.comm = {*f};
  auto back = ProfileFromJson(ToJson(q), "q.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, q);
  EXPECT_FALSE(FitComm("p2p", 2, {{1024, 1e-5}}).ok());  // one size
}

TEST(ProfileTest, ProfileClusterAndModel) {
  const Profile p = TinyProfile();
  hw::Cluster c = ProfileCluster(p);
  EXPECT_TRUE(hw::Validate(c).ok());
  EXPECT_EQ(c.name, "profile:test-machine");
  EXPECT_EQ(c.provenance, p.provenance);
  EXPECT_EQ(c.num_ranks(), 2);
  EXPECT_EQ(c.nodes, 1);
  EXPECT_DOUBLE_EQ(c.usable_memory_bytes(), 4e9);
  EXPECT_DOUBLE_EQ(c.intra.bw_bytes_per_s, 1e9);
  EXPECT_DOUBLE_EQ(c.intra.latency_s, 2e-5);
  Profile no_comm = p;
  no_comm.comm.clear();
  EXPECT_TRUE(hw::Validate(ProfileCluster(no_comm)).ok());
  models::DitModel m = ProfileDitModel(p);
  EXPECT_TRUE(Validate(m).ok());
  EXPECT_EQ(m.hidden, 256);
  EXPECT_EQ(m.heads, 4);
  EXPECT_EQ(m.layers, 4);
  EXPECT_EQ(m.ffn, 1024);
  EXPECT_EQ(m.text_tokens, 0);
  EXPECT_EQ(m.bytes_per_elem, 4);
}

TEST(ProfileTest, CostModelReturnsFittedPrices) {
  auto p = std::make_shared<const Profile>(TinyProfile());
  ProfileCostModel cm(p);
  ASSERT_EQ(cm.profile(), p.get());
  EXPECT_DOUBLE_EQ(cm.StepOverheadS(), 0.01);
  EXPECT_DOUBLE_EQ(cm.BaseMemoryBytes(), 5e7);
  EXPECT_DOUBLE_EQ(cm.MemoryCapacityBytes(), 4e9 - 5e7);
  const double L = 2000;
  SeqCost w = cm.Cost(2000, {}, {1});
  EXPECT_NEAR(w.fwd_s, 1e-3 + 2e-6 * L + 1e-10 * L * L, 1e-15);
  EXPECT_NEAR(w.bwd_s, 2e-3 + 4e-6 * L + 2.5e-10 * L * L, 1e-15);
  EXPECT_DOUBLE_EQ(w.mem_bytes, 20000 * L);
  EXPECT_DOUBLE_EQ(w.comm_s, 0);
  EXPECT_DOUBLE_EQ(w.comm_bytes, 0);
  EXPECT_DOUBLE_EQ(cm.WholeTime(2000), w.time_s());
  SeqCost u = cm.Cost(2000, {1, 2, 1}, {0, 1});
  EXPECT_NEAR(u.fwd_s, 1.2e-3 + 1.1e-6 * L + 5.5e-11 * L * L, 1e-15);
  EXPECT_NEAR(u.bwd_s, 2.5e-3 + 2.2e-6 * L + 1.4e-10 * L * L, 1e-15);
  EXPECT_DOUBLE_EQ(u.compute_s, u.time_s());
  EXPECT_DOUBLE_EQ(u.comm_s, 0);
  EXPECT_DOUBLE_EQ(u.mem_bytes, 1e5 + 11000 * L);
  EXPECT_DOUBLE_EQ(cm.MemoryBytes(2000, {1, 2, 1}), u.mem_bytes);
  // Bytes as in the analytic model of the same shape: 3 passes x (h-1) x L/2 x 4 d b / h.
  AnalyticCostModel analytic(ProfileCluster(*p), ProfileDitModel(*p));
  EXPECT_DOUBLE_EQ(u.comm_bytes, analytic.Cost(2000, {1, 2, 1}, {0, 1}).comm_bytes);
  EXPECT_DOUBLE_EQ(u.comm_bytes, 4 * 3 * 1 * (L / 2) * 4 * 256 * 4 / 2);
  EXPECT_TRUE(cm.Supports({1, 1, 2}).ok());
  // There is no ideal setting with a profile.
  EXPECT_FALSE(cm.options().ideal);

  EXPECT_EQ(analytic.profile(), nullptr);
  EXPECT_DOUBLE_EQ(analytic.StepOverheadS(), 0);
  EXPECT_TRUE(analytic.Supports({1, 2, 1}).ok());
}

TEST(ProfileTest, SupportsNamesConfigAndRanks) {
  Profile lacking = TinyProfile();
  lacking.configs.erase(lacking.configs.begin() + 1);  // (2,1,1)
  ProfileCostModel cm(std::make_shared<const Profile>(lacking));
  core::Status st = cm.Supports({2, 1, 1});
  EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("(2,1,1)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("2 ranks"), std::string::npos) << st.message();
  // The simulator refuses such a plan before simulating.
  workload::Batch b = MakeBatch({1000});
  Plan plan{"hand", 2, {{0, {2, 1, 1}, {0, 1}}}};
  auto r = Simulate(plan, b, cm);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("placements[0]: config (2,1,1)"), std::string::npos)
      << r.status().message();
}

TEST(ProfileTest, SimulatedMakespanIsHandComputed) {
  // A (1,2,1) over {0,1}; B whole on rank 0 (short), C whole on rank 1 (long). In every
  // layer A starts when both ranks are free, so rank 0 waits for C each time; rank 1 never
  // waits: makespan = A + C (fwd + bwd prices) + the step overhead.
  ProfileCostModel cm(std::make_shared<const Profile>(TinyProfile()));
  workload::Batch b = MakeBatch({4000, 500, 3000});
  Plan plan{"hand", 2, {{0, {1, 2, 1}, {0, 1}}, {1, {}, {0}}, {2, {}, {1}}}};
  auto r = Simulate(plan, b, cm);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto quad = [](double a, double bb, double c, double L) { return a + bb * L + c * L * L; };
  const double A = quad(1.2e-3, 1.1e-6, 5.5e-11, 4000) + quad(2.5e-3, 2.2e-6, 1.4e-10, 4000);
  const double B = quad(1e-3, 2e-6, 1e-10, 500) + quad(2e-3, 4e-6, 2.5e-10, 500);
  const double C = quad(1e-3, 2e-6, 1e-10, 3000) + quad(2e-3, 4e-6, 2.5e-10, 3000);
  EXPECT_NEAR(r->makespan_s, A + C + 0.01, 1e-12);
  EXPECT_NEAR(r->busy_s[0], A + B, 1e-12);
  EXPECT_NEAR(r->busy_s[1], A + C, 1e-12);
  EXPECT_NEAR(r->finish_s[1], A + C, 1e-12);
  EXPECT_GT(r->finish_s[0], r->busy_s[0] + 1e-6);  // rank 0 waited
  const double mem0 = 5e7 + (1e5 + 11000 * 4000.0) + 20000 * 500.0;
  EXPECT_NEAR(r->mem_bytes[0], mem0, 1e-3);
  EXPECT_TRUE(r->feasible);
}

TEST(ProfileTest, SplitSequencesOfOneSegmentShareItsIntercept) {
  // Two (1,2,1) sequences on {0,1} form one engine segment: the fit intercepts (fwd 1.2e-3,
  // bwd 2.5e-3) are paid once; a third on the reversed rank set is its own segment.
  ProfileCostModel cm(std::make_shared<const Profile>(TinyProfile()));
  auto quad = [](double a, double bb, double c, double L) { return a + bb * L + c * L * L; };
  const double A = quad(1.2e-3, 1.1e-6, 5.5e-11, 1000) + quad(2.5e-3, 2.2e-6, 1.4e-10, 1000);
  workload::Batch b = MakeBatch({1000, 1000, 1000});
  Plan same{"hand", 2, {{0, {1, 2, 1}, {0, 1}}, {1, {1, 2, 1}, {0, 1}}}};
  auto r = Simulate(same, MakeBatch({1000, 1000}), cm);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->busy_s[0], 2 * A - (1.2e-3 + 2.5e-3), 1e-12);
  Plan other{"hand", 2, {{0, {1, 2, 1}, {0, 1}}, {1, {1, 2, 1}, {0, 1}}, {2, {1, 2, 1}, {1, 0}}}};
  r = Simulate(other, b, cm);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->busy_s[1], 3 * A - (1.2e-3 + 2.5e-3), 1e-12);
  // The analytic model shares nothing.
  AnalyticCostModel analytic(*hw::ClusterPreset("a800x8"), *models::DitModelPreset("wan2.1-1.3b"));
  EXPECT_EQ(analytic.SegmentSharedS({1, 2, 1}), std::make_pair(0.0, 0.0));
}

// Per-rank time factors: a whole sequence takes its price times its rank's factor, a split
// one its price times the larger factor of its ranks; no factors (or analytic) means 1.
TEST(ProfileTest, RankTimeFactorsScaleEachRanksWork) {
  Profile prof = TinyProfile();
  prof.rank_time_factors = {1.2, 0.9};
  ProfileCostModel cm(std::make_shared<const Profile>(prof));
  EXPECT_DOUBLE_EQ(cm.RankTimeFactor({0}), 1.2);
  EXPECT_DOUBLE_EQ(cm.RankTimeFactor({1}), 0.9);
  EXPECT_DOUBLE_EQ(cm.RankTimeFactor({1, 0}), 1.2);
  ProfileCostModel plain(std::make_shared<const Profile>(TinyProfile()));
  EXPECT_DOUBLE_EQ(plain.RankTimeFactor({0, 1}), 1.0);
  auto quad = [](double a, double bb, double c, double L) { return a + bb * L + c * L * L; };
  const double A = quad(1.2e-3, 1.1e-6, 5.5e-11, 4000) + quad(2.5e-3, 2.2e-6, 1.4e-10, 4000);
  const double B = quad(1e-3, 2e-6, 1e-10, 500) + quad(2e-3, 4e-6, 2.5e-10, 500);
  const double C = quad(1e-3, 2e-6, 1e-10, 3000) + quad(2e-3, 4e-6, 2.5e-10, 3000);
  Plan mixed{"hand", 2, {{0, {1, 2, 1}, {0, 1}}, {1, {}, {0}}, {2, {}, {1}}}};
  auto r = Simulate(mixed, MakeBatch({4000, 500, 3000}), cm);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->busy_s[0], 1.2 * A + 1.2 * B, 1e-12);
  EXPECT_NEAR(r->busy_s[1], 1.2 * A + 0.9 * C, 1e-12);
  // Rank 1's whole sequence takes longer than rank 0's in every layer even at its faster
  // pace (0.9 C > 1.2 B), so rank 1 never waits and sets the makespan (+ 0.01 s overhead).
  ASSERT_GT(0.9 * C, 1.2 * B);
  EXPECT_NEAR(r->makespan_s, 1.2 * A + 0.9 * C + 0.01, 1e-12);
  auto p = Simulate(mixed, MakeBatch({4000, 500, 3000}), plain);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NEAR(p->makespan_s, A + C + 0.01, 1e-12);
}

// Contention: with solo_speedup s, work a rank does while the other rank waits runs s times
// faster. B whole on rank 0 (short), C whole on rank 1 (long): both work until B's work is
// done, then C's rest runs alone. With A split over both first in every layer, each layer is
// A (both busy), then B and C together, then the rest of C alone; busy_s stays the prices.
TEST(ProfileTest, ContentionSpeedsUpWorkDoneAlone) {
  Profile prof = TinyProfile();
  prof.solo_speedup = 1.25;
  ProfileCostModel cm(std::make_shared<const Profile>(prof));
  EXPECT_TRUE(cm.HasContention());
  EXPECT_DOUBLE_EQ(cm.ContentionSpeed(1), 1.25);
  EXPECT_DOUBLE_EQ(cm.ContentionSpeed(2), 1.0);
  auto quad = [](double a, double bb, double c, double L) { return a + bb * L + c * L * L; };
  const double A = quad(1.2e-3, 1.1e-6, 5.5e-11, 4000) + quad(2.5e-3, 2.2e-6, 1.4e-10, 4000);
  const double B = quad(1e-3, 2e-6, 1e-10, 500) + quad(2e-3, 4e-6, 2.5e-10, 500);
  const double C = quad(1e-3, 2e-6, 1e-10, 3000) + quad(2e-3, 4e-6, 2.5e-10, 3000);
  Plan whole{"hand", 2, {{0, {}, {0}}, {1, {}, {1}}}};
  auto r = Simulate(whole, MakeBatch({500, 3000}), cm);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->makespan_s, B + (C - B) / 1.25 + 0.01, 1e-12);
  EXPECT_NEAR(r->finish_s[0], B, 1e-12);
  EXPECT_NEAR(r->busy_s[1], C, 1e-12);
  Plan mixed{"hand", 2, {{0, {1, 2, 1}, {0, 1}}, {1, {}, {0}}, {2, {}, {1}}}};
  r = Simulate(mixed, MakeBatch({4000, 500, 3000}), cm);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->makespan_s, A + B + (C - B) / 1.25 + 0.01, 1e-12);
  EXPECT_NEAR(r->busy_s[0], A + B, 1e-12);
}

// The event-driven path (any contention) with a speed-up of 1 + 1e-12 gives the list
// schedule's makespan and finish times on seeded random plans of every config.
TEST(ProfileTest, ContentionPathMatchesListScheduleWithoutSpeedup) {
  ProfileCostModel plain(std::make_shared<const Profile>(TinyProfile()));
  Profile p = TinyProfile();
  p.solo_speedup = 1.0 + 1e-12;
  ProfileCostModel shared(std::make_shared<const Profile>(p));
  ASSERT_FALSE(plain.HasContention());
  ASSERT_TRUE(shared.HasContention());
  const ParallelConfig configs[] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}};
  core::Rng rng(17);
  for (int trial = 0; trial < 200; ++trial) {
    const int k = 1 + static_cast<int>(rng.Below(12));
    std::vector<int64_t> tokens;
    Plan plan{"random", 2, {}};
    for (int s = 0; s < k; ++s) {
      tokens.push_back(8 + static_cast<int64_t>(rng.Below(6000)));
      const ParallelConfig c = configs[rng.Below(4)];
      std::vector<int> ranks =
          c.whole() ? std::vector<int>{static_cast<int>(rng.Below(2))}
                    : (rng.Below(2) ? std::vector<int>{0, 1} : std::vector<int>{1, 0});
      plan.placements.push_back({s, c, ranks});
    }
    const workload::Batch b = MakeBatch(tokens);
    auto x = Simulate(plan, b, plain);
    auto y = Simulate(plan, b, shared);
    ASSERT_TRUE(x.ok() && y.ok()) << trial;
    EXPECT_NEAR(y->makespan_s, x->makespan_s, 1e-9 * x->makespan_s) << trial;
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_NEAR(y->finish_s[rank], x->finish_s[rank], 1e-9 * x->makespan_s) << trial;
      EXPECT_DOUBLE_EQ(y->busy_s[rank], x->busy_s[rank]) << trial;
    }
  }
}

// Saved profiles reload: the hand-made one and the measured-format testdata file, through
// WriteJsonFile and LoadProfile.
TEST(ProfileTest, SavedProfilesReload) {
  auto testdata = LoadProfile(std::string(TESSERA_ZELLIGE_TESTDATA) + "/profile_2rank.json");
  ASSERT_TRUE(testdata.ok()) << testdata.status().ToString();
  Profile factors = TinyProfile();
  factors.rank_time_factors = {1.0, 1.125};
  factors.solo_speedup = 1.08;
  for (const Profile& p : {TinyProfile(), *testdata, factors}) {
    const std::string path =
        ::testing::TempDir() + "/profile_test_" + std::to_string(getpid()) + ".json";
    ASSERT_TRUE(core::WriteJsonFile(path, ToJson(p)).ok());
    auto back = LoadProfile(path);
    std::remove(path.c_str());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, p);
  }
}

// A fit must price every length of the profile's range at a time >= 0 (once accepted, a
// negative fit clamped at 0 made sequences free) and stay finite up to the longest sequence.
TEST(ProfileTest, FitsThatPriceSequencesNegativeOrInfiniteAreRefused) {
  const core::Json good = ToJson(TinyProfile());  // points 256..4096: range [1, 8192]
  core::Json j = good;
  j["configs"][0]["fwd_fit"] = {-1.0, 0.0, 0.0};
  ExpectError(j,
              "configs[0].fwd_fit: got [-1, 0, 0], prices 1 tokens at -1 s, must be >= 0 for "
              "every length in [1, 8192] tokens (the profile's range)");
  j = good;
  j["configs"][1]["bwd_fit"] = {1e-3, -1e-6, 0.0};  // negative for long sequences
  ExpectError(j,
              "configs[1].bwd_fit: got [0.001, -1e-06, 0], prices 8192 tokens at -0.007192 s, "
              "must be >= 0");
  j = good;
  j["configs"][2]["fwd_fit"] = {1e-3, -1e-6, 1.5e-10};  // positive at both ends, dips between
  ExpectError(j, "configs[2].fwd_fit: got [0.001, -1e-06, 1.5e-10], prices 3333 tokens at");
  j = good;
  j["configs"][0]["fwd_fit"] = {1e-3, 0.0, 1e300};  // finite over the range, not beyond
  ExpectError(j,
              "configs[0].fwd_fit: got [0.001, 0, 1e+300], prices 1.34218e+08 tokens at inf "
              "s, must be finite up to the longest sequence");
  j = good;
  j["configs"][3]["mem_fit"] = {1e9, -1.0};
  ExpectError(j,
              "configs[3].mem_fit[1]: got -1, must be >= 0 (bytes per token; memory does not "
              "shrink as a sequence grows)");
  j = good;
  j["configs"][3]["mem_fit"] = {-1e12, 1.0};
  ExpectError(j,
              "configs[3].mem_fit: got [-1e+12, 1], prices 8192 tokens at -1e+12 bytes, must "
              "be > 0 at twice the longest measured length");
  // Measured memory fits cross 0 below the shortest lengths (least squares on slightly
  // super-linear memory; EvalLine clamps): accepted.
  j = good;
  j["configs"][3]["mem_fit"] = {-9e5, 5.66e4};
  EXPECT_TRUE(ProfileFromJson(j, "p.json").ok());
}

// Sizes, lengths and times are bounded before any product or narrowing.
TEST(ProfileTest, ImplausibleNumbersAreRefused) {
  const core::Json good = ToJson(TinyProfile());
  auto error = [&](const std::string& pointer, const core::Json& value, const std::string& want) {
    core::Json j = good;
    j[core::Json::json_pointer(pointer)] = value;
    ExpectError(j, want);
  };
  // heads * head_dim once overflowed before the range check.
  error("/model/heads", int64_t{1} << 62,
        "model.heads: got 4611686018427387904, must be in [1, 4096]");
  error("/model/layers", 5000, "model.layers: got 5000, must be in [1, 1024]");
  error("/ranks", 1 << 20, "ranks: got 1048576, must be <= 65536");
  error("/configs/0/points/0/tokens", int64_t{1} << 40,
        "configs[0].points[0].tokens: got 1099511627776, must be in [1, 134217728]");
  error("/step_overhead_s", 1e300, "step_overhead_s: got 1e+300, must be <= 3600 s per step");
  error("/usable_bytes_per_rank", 1e300,
        "usable_bytes_per_rank: got 1e+300, must be in [1e+06, 1e+15] bytes");
  error("/comm/0/alpha_s", 1e9, "comm[0].alpha_s: got 1e+09, must be <= 60 s per message");
  error("/comm/0/beta_s_per_byte", 1.0,
        "comm[0].beta_s_per_byte: got 1, must be <= 0.001 s per byte (>= 1 kB/s)");
}

// A profile for `ranks` ranks (4 heads) pricing every config the planners may use there.
Profile ProfileFor(int ranks) {
  Profile p = TinyProfile();
  p.ranks = ranks;
  p.configs.clear();
  for (const ParallelConfig& c : PlannerConfigs(ranks, 4)) {
    const double d = c.degree();
    p.configs.push_back(
        Prices(c, {1e-3, 2e-6 / d, 1e-10 / d}, {2e-3, 4e-6 / d, 2.5e-10 / d}, {1e5, 20000 / d}));
  }
  return p;
}

// A profile must price every config any planner may place at its ranks, checked when it is
// loaded. At 6 ranks usp places long sequences on all 6 ranks and knapformer uses a bag of 3:
// a profile of power-of-two degrees only used to load and then fail inside those planners.
TEST(ProfileTest, EveryConfigThePlannersUseIsPricedAtLoad) {
  const Profile six = ProfileFor(6);
  ASSERT_TRUE(ProfileFromJson(ToJson(six), "six.json").ok());
  Profile powers_only = six;
  std::erase_if(powers_only.configs, [](const ConfigPrices& c) {
    const int d = c.config.degree();
    return (d & (d - 1)) != 0;
  });
  ExpectError(ToJson(powers_only),
              "configs: missing (1,1,3) (degree 3, needed by the planners for 6 ranks with 4 "
              "heads); measure the profile again at 6 ranks");
  // With every config priced, every planner plans and simulates.
  ProfileCostModel cost(std::make_shared<const Profile>(six));
  const workload::Batch batch = MakeBatch({4000, 2500, 900, 300, 40, 5});
  for (const PlannerEntry& e : PlannerRegistry()) {
    if (!e.in_all) continue;  // the exact references are slow
    auto run = RunPlanner(e, batch, cost, {});
    EXPECT_TRUE(run.ok()) << e.name << ": " << run.status().ToString();
  }
  // A knapformer.bags option may still ask for a size the profile lacks: a named
  // InvalidArgument, not an internal error.
  ProfileCostModel four(std::make_shared<const Profile>(ProfileFor(4)));
  auto run =
      RunPlanner(**FindPlanner("knapformer"), batch, four, {{"knapformer.bags", "g3n1+g1n1"}});
  EXPECT_EQ(run.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("knapformer: placements["), std::string::npos)
      << run.status().message();
  EXPECT_NE(run.status().message().find("config (1,1,3): not measured by the profile"),
            std::string::npos)
      << run.status().message();
}

// Prices that are each finite can still sum past a double: the step is an error, never a
// feasible step of makespan inf.
TEST(ProfileTest, SimulatorRefusesANonFiniteMakespan) {
  Profile p = TinyProfile();
  p.configs[0].fwd_fit = {1.5e308, 0, 0};  // built in code: the loader would refuse it
  p.configs[0].bwd_fit = {1.5e308, 0, 0};
  ProfileCostModel cm(std::make_shared<const Profile>(p));
  Plan plan{"hand", 2, {{0, {}, {0}}, {1, {}, {1}}}};
  auto r = Simulate(plan, MakeBatch({100, 200}), cm);
  EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("makespan_s: got inf, must be finite", 0), 0u)
      << r.status().message();
  // A memory price that is not finite is refused before planning.
  Profile m = TinyProfile();
  for (ConfigPrices& c : m.configs) c.mem_fit = {1e308, 1e308};
  ProfileCostModel mem(std::make_shared<const Profile>(m));
  core::Status fits = CheckBatchFits(MakeBatch({100}), mem);
  EXPECT_EQ(fits.code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(fits.message(),
            "sequences[0]: 100 tokens are priced at a memory that is not finite (check the "
            "cluster's, model's or profile's numbers)");
}

}  // namespace
}  // namespace tessera::zellige
