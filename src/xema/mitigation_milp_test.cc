#include "xema/mitigation_milp.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "core/rng.h"

namespace tessera::xema {
namespace {

// The plain reference: every combination of options, the cheapest that fits (ties: the
// least total largest-saving), else the least shortfall.
struct Brute {
  std::vector<int> option;
  double added_s = 0;
  int64_t peak = 0;
};

Brute BruteForce(const MitigationProblem& p, const std::vector<ForbiddenChoice>& forbidden) {
  std::vector<int> option(p.actions.size(), 0);
  Brute best;
  bool have = false;
  int64_t best_short = std::numeric_limits<int64_t>::max();
  while (true) {
    bool banned = false;
    for (const ForbiddenChoice& f : forbidden) banned = banned || f.option == option;
    if (!banned) {
      int64_t peak = 0;
      for (const MitigationRow& row : p.rows) peak = std::max(peak, PredictedRowBytes(row, option));
      double t = 0;
      for (size_t a = 0; a < option.size(); ++a) t += p.actions[a].options[option[a]].added_s;
      const int64_t shortfall = std::max<int64_t>(0, peak - p.limit_bytes);
      if (!have || shortfall < best_short ||
          (shortfall == best_short && t < best.added_s - 1e-12)) {
        best = {option, t, peak};
        best_short = shortfall;
        have = true;
      }
    }
    size_t a = 0;
    while (a < option.size() && ++option[a] == static_cast<int>(p.actions[a].options.size())) {
      option[a++] = 0;
    }
    if (a == option.size()) break;
  }
  return best;
}

// Uniform integer in [lo, hi].
int64_t UniformInt(core::Rng& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
}

MitigationProblem RandomProblem(core::Rng& rng) {
  MitigationProblem p;
  const int actions = 1 + static_cast<int>(UniformInt(rng, 0, 3));
  for (int a = 0; a < actions; ++a) {
    MitigationActionSpec act;
    act.name = fmt::format("a{}", a);
    act.options.push_back({"off", 0});
    const int n = 1 + static_cast<int>(UniformInt(rng, 0, 3));
    for (int o = 1; o <= n; ++o) act.options.push_back({"o", rng.Uniform(0.01, 1.0)});
    p.actions.push_back(act);
  }
  const int rows = 1 + static_cast<int>(UniformInt(rng, 0, 11));
  for (int r = 0; r < rows; ++r) {
    MitigationRow row;
    row.point = fmt::format("p{}", r);
    row.live_bytes = UniformInt(rng, 50, 200) * (int64_t{1} << 20);
    if (rng.Uniform(0, 1) < 0.3) {
      row.condition.action = static_cast<int>(UniformInt(rng, 0, actions - 1));
      row.condition.option = static_cast<int>(UniformInt(
          rng, 0, static_cast<int64_t>(p.actions[row.condition.action].options.size()) - 1));
    }
    for (int a = 0; a < actions; ++a) {
      for (int o = 1; o < static_cast<int>(p.actions[a].options.size()); ++o) {
        if (rng.Uniform(0, 1) < 0.6) {
          row.savings.push_back({a, o, (UniformInt(rng, -5, 60)) * (int64_t{1} << 20)});
        }
      }
    }
    p.rows.push_back(row);
  }
  p.limit_bytes = UniformInt(rng, 40, 180) * (int64_t{1} << 20);
  return p;
}

TEST(MitigationMilpTest, MatchesBruteForceOnRandomProblems) {
  core::Rng rng(7);
  int fit = 0, short_of = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const MitigationProblem p = RandomProblem(rng);
    std::vector<ForbiddenChoice> forbidden;
    if (trial % 4 == 0) forbidden.push_back({BruteForce(p, {}).option});
    const Brute ref = BruteForce(p, forbidden);
    auto got = SolveMitigation(p, forbidden);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const int64_t ref_short = std::max<int64_t>(0, ref.peak - p.limit_bytes);
    EXPECT_EQ(got->shortfall_bytes, ref_short) << "trial " << trial;
    if (ref_short == 0) {
      ++fit;
      // Stage 2 may trade up to the tolerance (1 ms) of time for fewer bytes.
      EXPECT_GE(got->added_s, ref.added_s - 1e-9) << "trial " << trial;
      EXPECT_LE(got->added_s, ref.added_s + 1e-3 + 1e-9) << "trial " << trial;
      EXPECT_LE(got->predicted_peak_bytes, p.limit_bytes);
    } else {
      ++short_of;
    }
    for (const ForbiddenChoice& f : forbidden) EXPECT_NE(got->option, f.option);
  }
  // Both outcomes were exercised.
  EXPECT_GT(fit, 20);
  EXPECT_GT(short_of, 5);
}

TEST(MitigationMilpTest, ChoosesNothingWhenEverythingFits) {
  MitigationProblem p;
  p.limit_bytes = 100;
  p.actions = {{"tiles", {{"off", 0}, {"t2", 0.5}}}};
  p.rows = {{"a", 90, {}, {{0, 1, 40}}}};
  auto got = SolveMitigation(p);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->option, std::vector<int>{0});
  EXPECT_EQ(got->added_s, 0);
  EXPECT_EQ(got->predicted_peak_bytes, 90);
}

TEST(MitigationMilpTest, AmongEquallyFastChoicesTheWeakestThatFitsWins) {
  // Excess 10: "k=2" saves 15, "k=4" 30, "k=8" 45, all equally fast.
  MitigationProblem p;
  p.limit_bytes = 100;
  p.actions = {{"chunks", {{"off", 0}, {"k=8", 0.001}, {"k=2", 0.001}, {"k=4", 0.001}}}};
  p.rows = {{"a", 110, {}, {{0, 1, 45}, {0, 2, 15}, {0, 3, 30}}}};
  auto got = SolveMitigation(p);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->option, std::vector<int>{2});
  EXPECT_EQ(got->predicted_peak_bytes, 95);
  // A faster, stronger option beats it by more than the tolerance: time comes first.
  p.actions[0].options[1].added_s = 0.0001;
  p.actions[0].options[2].added_s = 0.01;
  p.actions[0].options[3].added_s = 0.005;
  got = SolveMitigation(p);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->option, std::vector<int>{1});
}

TEST(MitigationMilpTest, ConditionalRowsBindOnlyForTheirOption) {
  // Action 0 is structural: option 1 replaces the point "vae" (live 150) by "vae.t2" (live 95).
  MitigationProblem p;
  p.limit_bytes = 100;
  p.actions = {{"vae", {{"off", 0}, {"tiles=2", 0.3}}}, {"offload", {{"off", 0}, {"on", 0.2}}}};
  p.rows = {{"vae", 150, {0, 0}, {{1, 1, 20}}}, {"vae.t2", 95, {0, 1}, {{1, 1, 20}}}};
  auto got = SolveMitigation(p);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->option, (std::vector<int>{1, 0}));
  EXPECT_NEAR(got->added_s, 0.3, 1e-9);
  EXPECT_EQ(got->predicted_peak_bytes, 95);
  // Forbid it: then tiles + offload is the only fit (0.5 s).
  auto second = SolveMitigation(p, {{{1, 0}}});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->option, (std::vector<int>{1, 1}));
  EXPECT_EQ(second->predicted_peak_bytes, 75);
}

TEST(MitigationMilpTest, ReportsTheShortfallWhenNothingFits) {
  MitigationProblem p;
  p.limit_bytes = 100;
  p.actions = {{"a", {{"off", 0}, {"on", 1.0}}}};
  p.rows = {{"x", 200, {}, {{0, 1, 60}}}};
  auto got = SolveMitigation(p);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->fits());
  EXPECT_EQ(got->shortfall_bytes, 40);
  EXPECT_EQ(got->option, std::vector<int>{1});
}

TEST(MitigationMilpTest, RejectsBadProblems) {
  MitigationProblem p;
  p.limit_bytes = 10;
  p.actions = {{"a", {}}};
  EXPECT_NE(SolveMitigation(p).status().message().find("actions[0] (a): no options"),
            std::string::npos);
  p.actions = {{"a", {{"off", 0}, {"on", -1}}}};
  EXPECT_NE(SolveMitigation(p).status().message().find("added_s -1"), std::string::npos);
  p.actions = {{"a", {{"off", 0}}}};
  p.rows = {{"x", 5, {}, {{0, 3, 1}}}};
  EXPECT_NE(SolveMitigation(p).status().message().find("rows[0] (x): saving for (0, 3)"),
            std::string::npos);
  p.rows = {{"x", 5, {2, 0}, {}}};
  EXPECT_NE(SolveMitigation(p).status().message().find("condition (2, 0)"), std::string::npos);
  p.rows.clear();
  p.limit_bytes = -1;
  EXPECT_FALSE(SolveMitigation(p).ok());
  p.limit_bytes = 10;
  EXPECT_FALSE(SolveMitigation(p, {{{0, 0, 0}}}).ok());
}

}  // namespace
}  // namespace tessera::xema
