// gIoU, cIoU and P@t on hand counts, including an empty prediction and an empty target; the
// bootstrap's determinism and bounds; per-tier grouping.
#include "tarot/metrics.h"

#include <gtest/gtest.h>

namespace tessera::tarot {
namespace {

// A 10 x 10 mask with the pixels [x0, x1) x [y0, y1) set.
Mask Rect(int x0, int y0, int x1, int y1) {
  return BoxMask(10, 10,
                 Box{static_cast<double>(x0), static_cast<double>(y0), static_cast<double>(x1),
                     static_cast<double>(y1)});
}

// Six samples with known counts:
//   a: P = 4 px [0,4)x[0,1), G = 4 px [2,6)x[0,1): I = 2, U = 6, IoU 1/3
//   b: both empty: I = 0, U = 0, IoU 1 (by definition)
//   c: P empty, G 5 px: I = 0, U = 5, IoU 0
//   d: P 3 px, G empty: I = 0, U = 3, IoU 0 (by definition)
//   e: P = G = 10 px: I = 10, U = 10, IoU 1
//   f: P 4 px [0,4)x[5,6) over G 3 px [0,3)x[5,6): I = 3, U = 4, IoU 0.75
std::vector<SampleScore> HandSamples() {
  const Mask none(10, 10);
  return {ScoreSample(Rect(0, 0, 4, 1), Rect(2, 0, 6, 1), "E0"),
          ScoreSample(none, none, "E0"),
          ScoreSample(none, Rect(0, 0, 5, 1), "E1"),
          ScoreSample(Rect(0, 0, 3, 1), none, "E1"),
          ScoreSample(Rect(0, 0, 10, 1), Rect(0, 0, 10, 1), "I1"),
          ScoreSample(Rect(0, 5, 4, 6), Rect(0, 5, 3, 6), "I1")};
}

TEST(TarotMetrics, SampleIouEmptyCases) {
  const Mask none(10, 10);
  EXPECT_DOUBLE_EQ(SampleIou(none, none), 1.0);
  EXPECT_DOUBLE_EQ(SampleIou(Rect(0, 0, 3, 1), none), 0.0);
  EXPECT_DOUBLE_EQ(SampleIou(none, Rect(0, 0, 3, 1)), 0.0);
  EXPECT_DOUBLE_EQ(SampleIou(Rect(0, 0, 4, 1), Rect(2, 0, 6, 1)), 2.0 / 6.0);
  // MaskIou keeps its own convention (0 for two empty masks); the metric differs on purpose.
  EXPECT_DOUBLE_EQ(MaskIou(none, none), 0.0);
}

TEST(TarotMetrics, HandCounts) {
  const std::vector<SampleScore> s = HandSamples();
  EXPECT_EQ(s[0].intersection, 2);
  EXPECT_EQ(s[0].union_count, 6);
  EXPECT_EQ(s[2].union_count, 5);
  EXPECT_EQ(s[3].union_count, 3);
  auto sum = Summarize(s, {.bootstrap_resamples = 0});
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->samples, 6);
  // gIoU = (1/3 + 1 + 0 + 0 + 1 + 0.75) / 6 = (37/12) / 6 = 37/72.
  EXPECT_DOUBLE_EQ(sum->giou, 37.0 / 72.0);
  // cIoU = (2 + 0 + 0 + 0 + 10 + 3) / (6 + 0 + 5 + 3 + 10 + 4) = 15 / 28.
  EXPECT_DOUBLE_EQ(sum->ciou, 15.0 / 28.0);
  // IoU >= 0.5: b, e, f; >= 0.7: b, e, f; >= 0.9: b, e.
  EXPECT_DOUBLE_EQ(sum->p50, 0.5);
  EXPECT_DOUBLE_EQ(sum->p70, 0.5);
  EXPECT_DOUBLE_EQ(sum->p90, 2.0 / 6.0);
  // No resamples: intervals collapse to the point.
  EXPECT_DOUBLE_EQ(sum->giou_ci.lo, sum->giou);
  EXPECT_DOUBLE_EQ(sum->ciou_ci.hi, sum->ciou);
}

TEST(TarotMetrics, AllEmptyGivesOne) {
  const Mask none(4, 4);
  auto sum = Summarize({ScoreSample(none, none), ScoreSample(none, none)}, {});
  ASSERT_TRUE(sum.ok());
  EXPECT_DOUBLE_EQ(sum->giou, 1.0);
  EXPECT_DOUBLE_EQ(sum->ciou, 1.0);
  EXPECT_DOUBLE_EQ(sum->p90, 1.0);
}

TEST(TarotMetrics, BootstrapIsSeededAndBracketsTheEstimate) {
  const std::vector<SampleScore> s = HandSamples();
  const MetricsOptions opt{.bootstrap_resamples = 500, .seed = 42};
  auto a = Summarize(s, opt), b = Summarize(s, opt);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->giou_ci.lo, b->giou_ci.lo);  // bitwise equal
  EXPECT_EQ(a->giou_ci.hi, b->giou_ci.hi);
  EXPECT_EQ(a->ciou_ci.lo, b->ciou_ci.lo);
  EXPECT_LE(a->giou_ci.lo, a->giou);
  EXPECT_GE(a->giou_ci.hi, a->giou);
  EXPECT_LT(a->giou_ci.lo, a->giou_ci.hi);
  EXPECT_GE(a->p90_ci.lo, 0.0);
  EXPECT_LE(a->p90_ci.hi, 1.0);
  auto c = Summarize(s, {.bootstrap_resamples = 500, .seed = 43});
  ASSERT_TRUE(c.ok());
  EXPECT_NE(std::make_pair(a->giou_ci.lo, a->giou_ci.hi),
            std::make_pair(c->giou_ci.lo, c->giou_ci.hi));
  // Identical samples: every draw is the same, the interval has zero width.
  const Mask none(4, 4);
  auto same = Summarize(std::vector<SampleScore>(5, ScoreSample(none, none)), opt);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->giou_ci.lo, 1.0);
  EXPECT_EQ(same->giou_ci.hi, 1.0);
}

TEST(TarotMetrics, PerTier) {
  auto by = SummarizeByTier(HandSamples(), {.bootstrap_resamples = 100});
  ASSERT_TRUE(by.ok());
  ASSERT_EQ(by->size(), 4u);  // E0, E1, I1, all
  // E0: IoU 1/3 and 1 -> gIoU 2/3; cIoU (2 + 0) / (6 + 0) = 1/3.
  EXPECT_DOUBLE_EQ(by->at("E0").giou, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(by->at("E0").ciou, 1.0 / 3.0);
  // E1: both 0; cIoU 0 / 8.
  EXPECT_DOUBLE_EQ(by->at("E1").giou, 0.0);
  EXPECT_DOUBLE_EQ(by->at("E1").ciou, 0.0);
  // I1: (1 + 0.75) / 2; cIoU 13 / 14.
  EXPECT_DOUBLE_EQ(by->at("I1").giou, 0.875);
  EXPECT_DOUBLE_EQ(by->at("I1").ciou, 13.0 / 14.0);
  EXPECT_EQ(by->at("all").samples, 6);
  EXPECT_DOUBLE_EQ(by->at("all").giou, 37.0 / 72.0);
}

TEST(TarotMetrics, Errors) {
  EXPECT_FALSE(Summarize({}).ok());
  const Mask none(4, 4);
  auto bad = Summarize({ScoreSample(none, none)}, {.bootstrap_resamples = -1});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bootstrap_resamples"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tarot
