#include "elaswave/dvfs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"

namespace tessera::elaswave {
namespace {

DvfsOptions Options(double cap_w) {
  DvfsOptions o;
  o.power_cap_w = cap_w;
  return o;
}

void ExpectWithinRangeAndCap(const std::vector<DvfsStage>& stages, const DvfsOptions& o,
                             const DvfsChoice& c) {
  ASSERT_EQ(c.frequency.size(), stages.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    EXPECT_GE(c.frequency[i], o.range.f_min) << i;
    EXPECT_LE(c.frequency[i], o.range.f_max) << i;
    // No stage idles: each is busy for the whole period (up to rounding).
    EXPECT_NEAR(stages[i].work_s / c.frequency[i], c.step_s, 1e-9 * c.step_s) << i;
  }
  EXPECT_LE(c.power_w, o.power_cap_w);
  EXPECT_LE(ModeledPowerW(stages, c.frequency, c.step_s, o.power), o.power_cap_w);
}

// A loose cap: the busiest stage runs at f_max, the other keeps its ratio.
// tau = 1 / 1.15; f = (1.15, 0.92); P = 2 x 100 + 300 (1.15^3 + 0.92^3) = 889.869 W.
TEST(Dvfs, LooseCapBoostsTheCriticalStageToFmax) {
  const std::vector<DvfsStage> stages = {{1.0}, {0.8}};
  const DvfsOptions o = Options(10000);
  auto c = ChooseFrequencies(stages, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->step_s, 1 / 1.15, 1e-12);
  EXPECT_NEAR(c->frequency[0], 1.15, 1e-12);
  EXPECT_NEAR(c->frequency[1], 0.92, 1e-12);
  EXPECT_NEAR(c->power_w, 889.869, 1e-3);
  EXPECT_EQ(c->limited_by, "f_max");
  // Before: f = 1, tau = 1, stage 1 busy 80% of it: 2 x 100 + 300 (1 + 0.8) = 740 W, 740 J.
  EXPECT_NEAR(c->step_before_s, 1.0, 1e-12);
  EXPECT_NEAR(c->power_before_w, 740, 1e-9);
  EXPECT_NEAR(c->energy_before_j, 740, 1e-9);
  EXPECT_NEAR(c->energy_per_step_j, 889.869 / 1.15, 1e-3);
  ExpectWithinRangeAndCap(stages, o, *c);
}

// The cap exactly the power at f = 1 of two equal stages: tau = cbrt(300 x 2 / (800 - 200)) = 1.
TEST(Dvfs, CapAtNominalPowerOfEqualStagesKeepsNominalSpeed) {
  const std::vector<DvfsStage> stages = {{1.0}, {1.0}};
  const DvfsOptions o = Options(800);
  EXPECT_NEAR(NominalPowerW(stages, o.power), 800, 1e-12);
  auto c = ChooseFrequencies(stages, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->step_s, 1.0, 1e-12);
  EXPECT_NEAR(c->frequency[0], 1.0, 1e-12);
  EXPECT_EQ(c->limited_by, "power cap");
  ExpectWithinRangeAndCap(stages, o, *c);
}

// After a loss: 4 stages of work 1 (cap 4 x 400 = 1600 W) become 3 of work 4/3: tau = cbrt(300 x 3
// (4/3)^3 / (1600 - 300)) = 1.179519 s, above (4/3) / 1.15 = 1.15942 s, so the cap binds and every
// stage runs at (4/3) / 1.179519 = 1.13039.
TEST(Dvfs, AfterALossTheSurvivorsBoostUpToTheFaultFreePower) {
  const std::vector<DvfsStage> before(4, DvfsStage{1.0});
  const std::vector<DvfsStage> after(3, DvfsStage{4.0 / 3});
  const DvfsOptions o = Options(NominalPowerW(before, PowerModel{}));
  EXPECT_NEAR(o.power_cap_w, 1600, 1e-9);
  auto c = ChooseFrequencies(after, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const double tau = std::cbrt(300 * 3 * std::pow(4.0 / 3, 3) / 1300);
  EXPECT_NEAR(tau, 1.179519, 1e-6);
  EXPECT_NEAR(c->step_s, tau, 1e-12);
  EXPECT_NEAR(c->frequency[2], 4.0 / 3 / tau, 1e-12);
  EXPECT_NEAR(c->power_w, 1600, 1e-9);
  EXPECT_LT(c->step_s, c->step_before_s);  // faster than f = 1 (4/3 s)
  EXPECT_NEAR(c->power_before_w, 1200, 1e-9);
  ExpectWithinRangeAndCap(after, o, *c);
}

// A stage that computes half of its period (a pipeline bubble) draws half the dynamic power:
// P(tau) = 100 + 300 x 0.5 (1 / tau)^3 <= 250 W gives tau = 1, f = 1; at f = 1 before, the same.
TEST(Dvfs, BusyShareScalesTheDynamicPower) {
  const std::vector<DvfsStage> stages = {{1.0, 0.5, 1}};
  const DvfsOptions o = Options(250);
  EXPECT_NEAR(NominalPowerW(stages, o.power), 250, 1e-12);
  auto c = ChooseFrequencies(stages, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->step_s, 1.0, 1e-12);
  EXPECT_NEAR(c->frequency[0], 1.0, 1e-12);
  ExpectWithinRangeAndCap(stages, o, *c);
}

TEST(Dvfs, InfeasibleWithTheReason) {
  // Work ratio 2 > 1.15 / 0.6: some stage would idle or leave the range.
  auto c = ChooseFrequencies({{1.0}, {0.5}}, Options(10000));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(c.status().message().find("stage 0 has 2.000x the work of stage 1, more than f_max"),
            std::string::npos)
      << c.status().message();
  // A cap at the idle power.
  c = ChooseFrequencies({{1.0, 1.0, 2}}, Options(200));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(c.status().message().find("not above the idle power 200.0 W"), std::string::npos)
      << c.status().message();
  // A cap just above it: the period it needs leaves the stage below f_min.
  c = ChooseFrequencies(std::vector<DvfsStage>{DvfsStage{1.0}}, Options(101));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("would run below f_min 0.6"), std::string::npos)
      << c.status().message();
}

TEST(Dvfs, BadInputNamesTheField) {
  const auto message = [](const std::vector<DvfsStage>& s, const DvfsOptions& o) {
    auto c = ChooseFrequencies(s, o);
    EXPECT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), core::StatusCode::kInvalidArgument);
    return c.status().message();
  };
  const std::vector<DvfsStage> ok = {{1.0}};
  EXPECT_EQ(message({{1.0}, {0.0}}, Options(500)).rfind("stages[1].work_s: got 0", 0), 0u);
  EXPECT_EQ(message({{1.0, 1.0, 0}}, Options(500)).rfind("stages[0].devices: got 0", 0), 0u);
  EXPECT_EQ(message({{1.0, 0.0, 1}}, Options(500)).rfind("stages[0].busy_share: got 0", 0), 0u);
  EXPECT_EQ(message({{1.0, 1.5, 1}}, Options(500)).rfind("stages[0].busy_share: got 1.5", 0), 0u);
  EXPECT_EQ(message({}, Options(500)).rfind("stages: empty", 0), 0u);
  DvfsOptions o = Options(500);
  o.range.f_min = 0;
  EXPECT_EQ(message(ok, o).rfind("f_min: got 0, must be in (0, 2]", 0), 0u);
  o.range = {0.6, 2.5};
  EXPECT_EQ(message(ok, o).rfind("f_max: got 2.5, must be in (0, 2]", 0), 0u);
  o.range = {1.2, 1.1};
  EXPECT_EQ(message(ok, o).rfind("f_min: got 1.2, above f_max 1.1", 0), 0u);
  o.range = {std::nan(""), 1.1};
  EXPECT_EQ(message(ok, o).rfind("f_min: got nan", 0), 0u);
  o = Options(-1);
  EXPECT_EQ(message(ok, o).rfind("power_cap_w: got -1", 0), 0u);
  o = Options(500);
  o.power.peak_w = 50;
  EXPECT_EQ(message(ok, o).rfind("peak_w: got 50, must be finite and above idle_w 100", 0), 0u);
  o.power = {-1, 400};
  EXPECT_EQ(message(ok, o).rfind("idle_w: got -1", 0), 0u);
  // A single-point range is allowed.
  o = Options(10000);
  o.range = {1.0, 1.0};
  auto c = ChooseFrequencies(ok, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->frequency[0], 1.0);
}

// The closed form against the plain grid on seeded random instances: feasible exactly when the
// grid finds a point (up to the grid's resolution), never later than the grid's first feasible
// period nor more than one grid step earlier, always in range and under the cap.
TEST(Dvfs, MatchesTheGridReferenceOnRandomInstances) {
  core::Rng rng(20261207);
  constexpr int kPoints = 20001;
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng.Below(8));
    std::vector<DvfsStage> stages(n);
    for (DvfsStage& s : stages) {
      s.work_s = rng.Uniform(0.5, 1.5);
      s.busy_share = rng.Below(2) == 0 ? 1.0 : rng.Uniform(0.3, 1.0);
      s.devices = 1 + static_cast<int>(rng.Below(4));
    }
    DvfsOptions o;
    o.range.f_min = rng.Uniform(0.3, 1.0);
    o.range.f_max = rng.Uniform(1.0, 1.8);
    o.power.idle_w = rng.Uniform(0.0, 150.0);
    o.power.peak_w = o.power.idle_w + rng.Uniform(50.0, 400.0);
    o.power_cap_w = NominalPowerW(stages, o.power) * rng.Uniform(0.6, 1.6);
    auto opt = ChooseFrequencies(stages, o);
    auto ref = ChooseFrequenciesByGrid(stages, o, kPoints);
    double min_w = 1e300, max_w = 0;
    for (const DvfsStage& s : stages) {
      min_w = std::min(min_w, s.work_s);
      max_w = std::max(max_w, s.work_s);
    }
    const double step = (2 * max_w / o.range.f_min - min_w / o.range.f_max / 2) / (kPoints - 1);
    if (!opt.ok()) {
      ASSERT_EQ(opt.status().code(), core::StatusCode::kInfeasible) << opt.status().ToString();
      EXPECT_FALSE(ref.ok()) << "trial " << trial << ": grid found tau " << ref->step_s;
      ++infeasible;
      continue;
    }
    ++feasible;
    ExpectWithinRangeAndCap(stages, o, *opt);
    if (!ref.ok()) {
      // Only a feasible interval narrower than a grid step can slip between its points.
      EXPECT_LT(min_w / o.range.f_min - opt->step_s, step * 1.001) << "trial " << trial;
      continue;
    }
    EXPECT_LE(opt->step_s, ref->step_s * (1 + 1e-12)) << "trial " << trial;
    EXPECT_LE(ref->step_s - opt->step_s, step * 1.001) << "trial " << trial;
    EXPECT_LE(ref->power_w, o.power_cap_w);
  }
  EXPECT_GT(feasible, 50);
  EXPECT_GT(infeasible, 10);
}

}  // namespace
}  // namespace tessera::elaswave
