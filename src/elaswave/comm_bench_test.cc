// CommBench's pure parts: mode names and order, the option checks, and the summary (p50 and max
// over repetitions of each repetition's slowest survivor, the ratio to in-place).
#include "elaswave/comm_bench.h"

#include <gtest/gtest.h>

namespace tessera::elaswave {
namespace {

using M = CommChangeMode;

CommBenchRepetition Rep(int n, double detect, std::map<M, double> seconds) {
  CommBenchRepetition r;
  r.ranks = n;
  r.detect_s = detect;
  r.steady_s = detect / 2;
  r.seconds = seconds;
  for (auto& [m, s] : seconds) r.call_seconds[m] = s / 10;
  return r;
}

TEST(CommBench, ModesParseByNameAndRunInTheirFixedOrder) {
  for (M m : {M::kInPlace, M::kPartial, M::kFull, M::kGloo}) {
    auto parsed = ParseCommChangeMode(CommChangeModeName(m));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, m);
  }
  auto bad = ParseCommChangeMode("restart");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--mode: got 'restart'"), std::string::npos);
  EXPECT_EQ(OrderedCommChangeModes({M::kGloo, M::kInPlace, M::kFull, M::kInPlace}),
            (std::vector<M>{M::kInPlace, M::kFull, M::kGloo}));
}

TEST(CommBench, OptionsOutsideTheirRangesAreRefusedNamingTheFlag) {
  CommBenchOptions o;
  o.run_dir = "/tmp/x";
  o.self_exe = "/bin/true";
  EXPECT_TRUE(CheckCommBenchOptions(o).ok());
  const auto refused = [](CommBenchOptions bad, const std::string& needle) {
    const core::Status s = CheckCommBenchOptions(bad);
    EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
  };
  CommBenchOptions few = o;
  few.ranks = {8, 2};
  refused(few, "--ranks: got 2");
  CommBenchOptions many = o;
  many.ranks = {65};
  refused(many, "--ranks: got 65");
  CommBenchOptions none = o;
  none.modes.clear();
  refused(none, "--mode");
  CommBenchOptions zero = o;
  zero.repeats = 0;
  refused(zero, "--repeats: got 0");
  CommBenchOptions gloo = o;
  gloo.modes = {M::kGloo};
  if (CommBenchHasGloo()) {
    EXPECT_TRUE(CheckCommBenchOptions(gloo).ok());
  } else {
    refused(gloo, "install libgloo-dev");
  }
}

TEST(CommBench, SummaryIsP50AndMaxPerRanksAndModeWithTheRatioToInPlace) {
  const std::vector<CommBenchRepetition> reps = {
      Rep(8, 0.010, {{M::kInPlace, 0.002}, {M::kFull, 0.400}}),
      Rep(8, 0.030, {{M::kInPlace, 0.004}, {M::kFull, 0.800}}),
      Rep(8, 0.020, {{M::kInPlace, 0.001}, {M::kFull, 0.600}}),
      Rep(4, 0.005, {{M::kInPlace, 0.001}, {M::kFull, 0.100}}),
      Rep(4, 0.007, {{M::kInPlace, 0.003}, {M::kFull, 0.300}}),
  };
  const auto rows = SummarizeCommBench(reps, {M::kInPlace, M::kFull});
  // Per N (in order of appearance): detect, steady, inplace, full.
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0].ranks, 8);
  EXPECT_EQ(rows[0].kind, CommBenchRowKind::kDetect);
  EXPECT_EQ(rows[0].stats.count, 3);
  EXPECT_DOUBLE_EQ(rows[0].stats.p50_s, 0.020);
  EXPECT_DOUBLE_EQ(rows[0].stats.max_s, 0.030);
  EXPECT_EQ(rows[1].kind, CommBenchRowKind::kSteady);
  EXPECT_DOUBLE_EQ(rows[1].stats.p50_s, 0.010);
  EXPECT_DOUBLE_EQ(rows[1].stats.max_s, 0.015);
  EXPECT_EQ(rows[2].kind, CommBenchRowKind::kMode);
  EXPECT_EQ(rows[2].mode, M::kInPlace);
  EXPECT_DOUBLE_EQ(rows[2].stats.p50_s, 0.002);
  EXPECT_DOUBLE_EQ(rows[2].stats.max_s, 0.004);
  EXPECT_DOUBLE_EQ(rows[2].call.p50_s, 0.0002);
  EXPECT_DOUBLE_EQ(rows[2].ratio_to_inplace, 1.0);
  EXPECT_EQ(rows[3].mode, M::kFull);
  EXPECT_DOUBLE_EQ(rows[3].stats.p50_s, 0.600);
  EXPECT_DOUBLE_EQ(rows[3].call.max_s, 0.080);
  EXPECT_DOUBLE_EQ(rows[3].ratio_to_inplace, 300.0);
  // An even count: the p50 is the mean of the middle two.
  EXPECT_EQ(rows[4].ranks, 4);
  EXPECT_DOUBLE_EQ(rows[6].stats.p50_s, 0.002);
  EXPECT_DOUBLE_EQ(rows[7].stats.p50_s, 0.200);
  EXPECT_DOUBLE_EQ(rows[7].ratio_to_inplace, 100.0);
}

TEST(CommBench, WithoutInPlaceThereIsNoRatio) {
  const auto rows = SummarizeCommBench({Rep(3, 0.01, {{M::kPartial, 0.5}})}, {M::kPartial});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows[2].stats.p50_s, 0.5);
  EXPECT_LT(rows[2].ratio_to_inplace, 0);
  const core::Json j = CommBenchResult{{}, rows, 2}.ToJson();
  EXPECT_EQ(j["kind"], "measured");
  EXPECT_EQ(j["summary"][0]["mode"], "detect");
  EXPECT_EQ(j["summary"][1]["mode"], "steady");
  EXPECT_TRUE(j["summary"][1]["call_p50_s"].is_null());
  EXPECT_EQ(j["summary"][2]["mode"], "partial");
  EXPECT_TRUE(j["summary"][2]["ratio_to_inplace"].is_null());
  EXPECT_DOUBLE_EQ(j["summary"][2]["call_p50_s"].get<double>(), 0.05);
}

}  // namespace
}  // namespace tessera::elaswave
