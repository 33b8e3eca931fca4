// The spanning-gap arithmetic of `bench death` on hand-made clocks: the gap around an instant,
// placebo instants (drawn at tokens, outside excluded windows, seeded), and the median band.
#include "kernelflume/spanning_gap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace tessera::kernelflume {
namespace {

TEST(SpanningGap, GapAroundAnInstant) {
  const std::vector<double> t = {1.0, 1.5, 3.5, 4.0};
  EXPECT_DOUBLE_EQ(*SpanningGapS(t, 2.0), 2.0);  // inside the long gap
  EXPECT_DOUBLE_EQ(*SpanningGapS(t, 1.2), 0.5);
  EXPECT_DOUBLE_EQ(*SpanningGapS(t, 1.5), 2.0);    // at a token: the gap that starts there
  EXPECT_FALSE(SpanningGapS(t, 0.5).has_value());  // before the first token
  EXPECT_FALSE(SpanningGapS(t, 4.0).has_value());  // at or after the last
  EXPECT_FALSE(SpanningGapS({}, 1.0).has_value());
}

TEST(SpanningGap, LengthBiasOfUniformInstants) {
  // Gaps alternate 1 and 3: their median is 2, but an instant uniform in time lands in a 3-gap
  // three times out of four, so the median gap spanning such instants is 3.
  std::vector<double> t = {0};
  for (int i = 0; i < 100; ++i) t.push_back(t.back() + (i % 2 == 0 ? 1.0 : 3.0));
  std::vector<double> spanning;
  for (int i = 0; i < 392; ++i) spanning.push_back(*SpanningGapS(t, 0.25 + i * 0.5));  // 49 x 4 s
  int long_gaps = 0;
  for (double g : spanning) long_gaps += g == 3.0;
  EXPECT_EQ(long_gaps, 294);  // 3/4 of 392
}

TEST(SpanningGap, UnaffectedRequestsClearOfOtherKills) {
  // Request 0 steps every 1 s; request 1 is hit by the kill at 2.5 and stalls until 6;
  // request 2 is hit by the kill at 4.5 and stalls until 7.
  const std::vector<std::vector<double>> reqs = {
      {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 6, 7}, {0, 1, 2, 3, 4, 7, 8}};
  const std::vector<KillInstant> kills = {{2.5, {1}}, {4.5, {2}}, {6.5, {}}};
  const std::vector<UnaffectedGaps> u = UnaffectedSpanningGaps(reqs, kills);
  ASSERT_EQ(u.size(), 3u);
  // Kill at 2.5: request 0 (gap 1) and request 2 (gap 1; its own kill comes after its next token).
  EXPECT_EQ(u[0].gaps_s, (std::vector<double>{1, 1}));
  EXPECT_EQ(u[0].overlapped, 0);
  // Kill at 4.5: request 0 (gap 1); request 1 is still stalled by the kill at 2.5 (no token
  // since): overlapped, not a 4 s bystander gap.
  EXPECT_EQ(u[1].gaps_s, (std::vector<double>{1}));
  EXPECT_EQ(u[1].overlapped, 1);
  // Kill at 6.5: everyone unaffected; request 1 recovered at 6 (gap 1), request 2 is still
  // stalled by the kill at 4.5 (its last token 4): overlapped.
  EXPECT_EQ(u[2].gaps_s, (std::vector<double>{1, 1}));
  EXPECT_EQ(u[2].overlapped, 1);
}

TEST(SpanningGap, UnaffectedRequestStalledByALaterKillIsOverlapped) {
  // Request 1 is left alone by the kill at 1.5 but hit by the one at 1.8, before its next
  // token (at 3): its gap [1, 3] is the later kill's stall.
  const std::vector<std::vector<double>> reqs = {{0, 1, 2, 3}, {0, 1, 3, 4}};
  const std::vector<KillInstant> kills = {{1.5, {}}, {1.8, {1}}};
  const std::vector<UnaffectedGaps> u = UnaffectedSpanningGaps(reqs, kills);
  EXPECT_EQ(u[0].gaps_s, (std::vector<double>{1}));
  EXPECT_EQ(u[0].overlapped, 1);
  EXPECT_EQ(u[1].gaps_s, (std::vector<double>{1}));  // request 0 at the second kill
  EXPECT_EQ(u[1].overlapped, 0);
  // A request without a token on one side is in neither list.
  const std::vector<KillInstant> late = {{3.5, {}}};
  EXPECT_EQ(UnaffectedSpanningGaps(reqs, late)[0].gaps_s, (std::vector<double>{1}));
  EXPECT_EQ(UnaffectedSpanningGaps(reqs, late)[0].overlapped, 0);
}

TEST(SpanningGap, PlaceboInstantsAreTokensOutsideTheWindows) {
  const std::vector<std::vector<double>> reqs = {{0, 2, 4, 6, 8, 10}, {1, 3, 5, 7, 9, 11}};
  const std::vector<TimeWindow> none;
  // Every token but the first (0) and the last (11), sorted and distinct.
  EXPECT_EQ(PlaceboInstants(reqs, none, 100, 7),
            (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  const std::vector<TimeWindow> kills = {{2.5, 5.0}, {8.0, 8.5}};
  EXPECT_EQ(PlaceboInstants(reqs, kills, 100, 7), (std::vector<double>{1, 2, 6, 7, 9, 10}));
  const std::vector<double> three = PlaceboInstants(reqs, kills, 3, 7);
  ASSERT_EQ(three.size(), 3u);
  for (double t : three) EXPECT_TRUE(t == 1 || t == 2 || t == 6 || t == 7 || t == 9 || t == 10);
  EXPECT_TRUE(std::is_sorted(three.begin(), three.end()));
  EXPECT_EQ(PlaceboInstants(reqs, kills, 3, 7), three);  // seeded
  EXPECT_TRUE(PlaceboInstants({}, none, 5, 1).empty());
  EXPECT_TRUE(PlaceboInstants(reqs, none, 0, 1).empty());
}

TEST(SpanningGap, MedianBandOfAConstantPoolIsThePool) {
  const std::vector<double> pool(50, 4.0);
  const MedianBand b = MedianNoiseBand(pool, 10, 100, 3);
  EXPECT_EQ(b.n, 10);
  EXPECT_EQ(b.draws, 100);
  EXPECT_DOUBLE_EQ(b.p5, 4.0);
  EXPECT_DOUBLE_EQ(b.p95, 4.0);
}

TEST(SpanningGap, MedianBandOfTheWholePoolIsItsMedian) {
  // n = the pool's size: every draw is the whole pool, so every median is the pool's median.
  const std::vector<double> pool = {5, 1, 4, 2, 3};
  const MedianBand b = MedianNoiseBand(pool, 99, 20, 3);
  EXPECT_EQ(b.n, 5);
  EXPECT_DOUBLE_EQ(b.p5, 3.0);
  EXPECT_DOUBLE_EQ(b.p95, 3.0);
}

TEST(SpanningGap, MedianBandOfOneDrawIsThePool) {
  // n = 1: each draw's median is one pool value, so the band spans the pool's p5..p95 roughly
  // and stays within its range; the middle of 1000 draws of {0..99} is near 50.
  std::vector<double> pool;
  for (int i = 0; i < 100; ++i) pool.push_back(i);
  const MedianBand b = MedianNoiseBand(pool, 1, 1000, 11);
  EXPECT_GE(b.p5, 0);
  EXPECT_LE(b.p5, 10);
  EXPECT_GE(b.p95, 89);
  EXPECT_LE(b.p95, 99);
  EXPECT_NEAR(b.p50, 50, 8);
  EXPECT_LT(b.p5, b.p50);
  EXPECT_EQ(MedianNoiseBand(pool, 1, 1000, 11).p50, b.p50);  // seeded
}

TEST(SpanningGap, MedianBandEmpty) {
  EXPECT_EQ(MedianNoiseBand({}, 5, 10, 1).n, 0);
  const std::vector<double> pool = {1, 2};
  EXPECT_EQ(MedianNoiseBand(pool, 0, 10, 1).n, 0);
  EXPECT_EQ(MedianNoiseBand(pool, 1, 0, 1).draws, 0);
}

}  // namespace
}  // namespace tessera::kernelflume
