// BuildProfile on synthetic measurements with known answers.
#include "zellige/profile_builder.h"

#include <gtest/gtest.h>

#include "core/units.h"

namespace tessera::zellige {
namespace {

constexpr double kFixedFwd = 0.01, kFixedBwd = 0.02, kFixedBytes = 1000, kBase = 1e6;
constexpr double kTail = 0.005;

RankMeasurement Rank(int64_t tokens, double fwd, double bwd, double extra_bytes) {
  RankMeasurement r;
  r.local_tokens = tokens;
  r.forward_s = {fwd};
  r.backward_s = {bwd};
  r.tail_s = {kTail};
  r.step_s = {fwd + bwd + kTail};
  r.base_bytes = static_cast<int64_t>(kBase);
  r.peak_bytes = static_cast<int64_t>(kBase + extra_bytes);
  return r;
}

MeasuredPoint Point(int config, int64_t tokens, int64_t count, std::vector<RankMeasurement> rs) {
  MeasuredPoint p;
  p.config = config;
  p.tokens = tokens;
  p.count = count;
  p.m.memory_measured = true;
  p.m.ranks = std::move(rs);
  return p;
}

// 2 ranks, configs whole (1,1,1) and (2,1,1); per sequence fwd = 1e-3 + 1e-5 L, bwd = 2 fwd,
// mem = 100 L bytes; the degree-2 config's rank 1 is the slower member (+ 0.001 s).
ProfileMeasurements Synthetic() {
  ProfileMeasurements in;
  in.ranks = 2;
  in.configs = {ParallelConfig{1, 1, 1}, ParallelConfig{2, 1, 1}};
  in.points.push_back(Point(kCalibrationPoint, 8, 1,
                            {Rank(8, 0.5, 0.5, 5e3), Rank(0, kFixedFwd, kFixedBwd, kFixedBytes)}));
  for (int64_t L : {16, 32, 64}) {
    const double f = 1e-3 + 1e-5 * L;
    const int64_t count = 2;
    auto busy = Rank(L * count, kFixedFwd + count * f, kFixedBwd + count * 2 * f,
                     kFixedBytes + count * 100.0 * L);
    in.points.push_back(Point(0, L, count, {busy, busy}));
    in.points.push_back(
        Point(1, L, 1,
              {Rank(L / 2, kFixedFwd + f, kFixedBwd + 2 * f, kFixedBytes + 100.0 * L),
               Rank(L / 2, kFixedFwd + f + 0.001, kFixedBwd + 2 * f, kFixedBytes + 50.0 * L)}));
  }
  // Solo: the whole point at 32 tokens takes half as long on rank 0 alone.
  const double f32 = 1e-3 + 1e-5 * 32;
  const double busy = kFixedFwd + kFixedBwd + 2 * 3 * f32;
  in.points.push_back(
      Point(kSoloPoint, 32, 2, {Rank(64, busy / 2 / 3, busy / 2 * 2 / 3, 0), Rank(0, 0, 0, 0)}));
  return in;
}

ProfileBuildOptions Options() {
  ProfileBuildOptions o;
  o.repeats = 1;
  o.machine.hostname = "box";
  o.machine.cpu_model = "cpu";
  o.machine.cores = 2;
  o.machine.memory_bytes = 10 * core::kGiBInt64;
  o.machine.date = "2025-03-01T12:00:00Z";
  return o;
}

TEST(BuildProfileTest, KnownPricesAndConstants) {
  auto p = BuildProfile(Synthetic(), Options());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->provenance, "measured on box (cpu, 2 cores), 2025-03-01T12:00:00Z");
  EXPECT_EQ(p->machine, "box (cpu, 2 cores)");
  EXPECT_EQ(p->ranks, 2);
  EXPECT_NEAR(p->step_overhead_s, kTail + kFixedFwd + kFixedBwd, 1e-12);
  EXPECT_NEAR(p->base_bytes, kBase + kFixedBytes, 1e-6);
  EXPECT_NEAR(p->usable_bytes_per_rank, 0.9 * 10 * core::kGiB / 2, 1);
  EXPECT_NEAR(p->solo_speedup, 2.0, 1e-9);
  ASSERT_EQ(p->configs.size(), 2u);
  const ConfigPrices& whole = p->configs[0];
  ASSERT_EQ(whole.points.size(), 3u);
  for (const PricePoint& pt : whole.points) {
    const double f = 1e-3 + 1e-5 * pt.tokens;
    EXPECT_NEAR(pt.fwd_s, f, 1e-12);
    EXPECT_NEAR(pt.bwd_s, 2 * f, 1e-12);
    EXPECT_NEAR(pt.mem_bytes, 100.0 * pt.tokens, 1e-6);
    EXPECT_EQ(pt.count, 2);
  }
  EXPECT_NEAR(EvalQuadratic(whole.fwd_fit, 48), 1e-3 + 1e-5 * 48, 1e-9);
  EXPECT_NEAR(EvalLine(whole.mem_fit, 48), 4800, 1e-3);
  // Degree 2: the block's slowest member, the largest participant peak.
  const PricePoint& pt = p->configs[1].points[0];
  EXPECT_NEAR(pt.fwd_s, 1e-3 + 1e-5 * 16 + 0.001, 1e-12);
  EXPECT_NEAR(pt.mem_bytes, 1600, 1e-6);
}

TEST(BuildProfileTest, SoloSpeedupClampsToTheNamedRange) {
  ProfileMeasurements in = Synthetic();
  RankMeasurement& r0 = in.points.back().m.ranks[0];
  r0.forward_s = {1e-7};
  r0.backward_s = {1e-7};
  auto p = BuildProfile(in, Options());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->solo_speedup, kMaxSpeedFactor);
}

TEST(BuildProfileTest, UnknownMemoryAssumes8GiB) {
  ProfileBuildOptions o = Options();
  o.machine.memory_bytes = 0;
  auto p = BuildProfile(Synthetic(), o);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->usable_bytes_per_rank, 0.9 * 8 * core::kGiB / 2, 1);
}

TEST(BuildProfileTest, RejectsTooFewPointsAndWrongRanks) {
  ProfileMeasurements in = Synthetic();
  in.configs.push_back(ParallelConfig{1, 2, 1});  // no points
  auto p = BuildProfile(in, Options());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("config (1,2,1): got 0 points, must be >= 3"),
            std::string::npos)
      << p.status().message();
  in = Synthetic();
  in.points[1].m.ranks.pop_back();
  p = BuildProfile(in, Options());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("points[1]: got 1 ranks"), std::string::npos)
      << p.status().message();
}

TEST(BuildProfileTest, ProfileModelOfCopiesTheSizes) {
  models::SmallDitConfig c;
  c.in_channels = 4;
  c.hidden = 32;
  c.num_heads = 2;
  c.num_layers = 1;
  c.ffn_hidden = 64;
  const ProfileModel m = ProfileModelOf(c);
  EXPECT_EQ(m, (ProfileModel{4, 32, 2, 16, 1, 64}));
}

}  // namespace
}  // namespace tessera::zellige
