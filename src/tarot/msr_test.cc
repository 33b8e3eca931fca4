// MSR, step by step, on hand masks in a 20 x 20 image with hand features. The grid has one patch
// per pixel (stride 1), so a similarity map is exactly the cosine of two pixels' features:
//   body (1, 0), part (0.6, 0.8), edge (0.8, 0.6), background (0, -1);
//   cos(part, part) = 1, cos(part, edge) = 0.96, cos(part, body) = 0.6, cos(part, bg) = -0.8.
// The area threshold is 1% of 400 = 4 pixels.
#include "tarot/msr.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tarot/tarot_test_util.h"

namespace tessera::tarot {
namespace {

using fakes::Inst;
using fakes::Rect;
using fakes::ScriptReasoner;
using fakes::ScriptSegmenter;

constexpr int kW = 20, kH = 20;
const double kBody = 0.0, kPart = std::atan2(0.8, 0.6), kEdge = std::atan2(0.6, 0.8),
             kBackground = -M_PI / 2;

// Columns 2..8 body, 9 part, 10 edge, 11..13 part, rows 2..9; background elsewhere.
PatchGrid Scene() {
  return fakes::PixelGrid(kW, kH, [](int x, int y) {
    if (y < 2 || y >= 10 || x < 2 || x >= 14) return kBackground;
    if (x == 10) return kEdge;
    if (x == 9 || x >= 11) return kPart;
    return kBody;
  });
}

TEST(TarotMsr, DisjointGivesEmpty) {
  ScriptReasoner r;
  TracedReasoner tr(r, nullptr);
  auto step = RefineStep(Rect(kW, kH, 0, 0, 4, 4), Rect(kW, kH, 10, 10, 14, 14), Scene(), "q", tr,
                         {}, nullptr);
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(step->branch, MsrBranch::kEmpty);
  EXPECT_TRUE(r.calls.empty());
}

TEST(TarotMsr, SmallRegionsKeepM) {
  // M = [2,10)^2; Q = M less pixel (3,3), plus 3 pixels of column 10: |D_M| = 1, |D_Q| = 3,
  // both <= 4 -> keep, without asking.
  const Mask m = Rect(kW, kH, 2, 2, 10, 10);
  Mask q = m | Rect(kW, kH, 10, 2, 11, 5);
  q.set(3, 3, false);
  ScriptReasoner r;
  TracedReasoner tr(r, nullptr);
  CallTrace trace;
  auto step = RefineStep(m, q, Scene(), "q", tr, {}, &trace);
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(step->branch, MsrBranch::kKeep);
  EXPECT_EQ(step->why, "small regions");
  EXPECT_EQ(step->dm_largest, 1);
  EXPECT_EQ(step->dq_largest, 3);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(trace.Calls("features"), 0);
}

TEST(TarotMsr, UnderSegmentationAddsPositiveAtRegionCentroid) {
  // M = [2,10)x[2,10), Q = [2,14)x[2,10): D_Q = [10,14)x[2,10) (32 px), D_M empty.
  // S_Q is the similarity to D_Q's centroid (12, 6), a part pixel: 1 on part, 0.96 on the edge
  // column 10, 0.6 on body. min S_Q over D_Q = 0.96, so P = D_Q plus the part column 9 of M:
  // columns 9..13, rows 2..9 (40 px), centroid x = (9.5 + ... + 13.5) / 5 = 11.5, y = 6.
  const Mask m = Rect(kW, kH, 2, 2, 10, 10), q = Rect(kW, kH, 2, 2, 14, 10);
  ScriptReasoner r;
  TracedReasoner tr(r, nullptr);
  auto step = RefineStep(m, q, Scene(), "q", tr, {}, nullptr);
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(step->branch, MsrBranch::kUnder);
  EXPECT_EQ(step->dq_area, 32);
  EXPECT_EQ(step->region, Rect(kW, kH, 9, 2, 14, 10));
  ASSERT_TRUE(step->point.has_value());
  EXPECT_EQ(*step->point, (Point{11.5, 6.0, true}));
  EXPECT_EQ(r.Count("JudgeRegion"), 1);

  // The reasoner says no: D_M is empty, so there is no over-segmentation check either.
  r.judge = [](const Mask&, const Mask&) { return false; };
  auto keep = RefineStep(m, q, Scene(), "q", tr, {}, nullptr);
  EXPECT_EQ(keep->branch, MsrBranch::kKeep);
  EXPECT_FALSE(keep->point.has_value());
}

TEST(TarotMsr, OverSegmentationAddsNegativeAtRegionCentroid) {
  // M = [2,14)x[2,10), Q = [2,10)x[2,10): D_M = [10,14)x[2,10), D_Q empty (no under check).
  // S_M from D_M's centroid (12, 6): min over D_M = 0.96 (edge); t = max(0.96, 0.5) = 0.96;
  // P = not(M ∩ Q) and S_M > 0.96 = the part columns 11..13, rows 2..9 (column 9 lies in
  // M ∩ Q): 24 px, centroid (12.5, 6). The reasoner says "not part" -> a negative point there.
  const Mask m = Rect(kW, kH, 2, 2, 14, 10), q = Rect(kW, kH, 2, 2, 10, 10);
  ScriptReasoner r;
  r.judge = [](const Mask&, const Mask&) { return false; };
  TracedReasoner tr(r, nullptr);
  auto step = RefineStep(m, q, Scene(), "q", tr, {}, nullptr);
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(step->branch, MsrBranch::kOver);
  EXPECT_EQ(step->region, Rect(kW, kH, 11, 2, 14, 10));
  ASSERT_TRUE(step->point.has_value());
  EXPECT_EQ(*step->point, (Point{12.5, 6.0, false}));

  // "Part of it": keep M.
  r.judge = nullptr;
  EXPECT_EQ(RefineStep(m, q, Scene(), "q", tr, {}, nullptr)->branch, MsrBranch::kKeep);
  // simi_thresh 1: t = 1, nothing is above it, P is empty -> keep without asking.
  const int asked = r.Count("JudgeRegion");
  MsrOptions strict;
  strict.simi_thresh = 1.0;
  auto empty = RefineStep(m, q, Scene(), "q", tr, strict, nullptr);
  EXPECT_EQ(empty->branch, MsrBranch::kKeep);
  EXPECT_EQ(empty->why, "over region empty");
  EXPECT_EQ(r.Count("JudgeRegion"), asked);
}

TEST(TarotMsr, PointPromptPeaksAndNegative) {
  // Features: body on M = [2,10)^2, background elsewhere. Every sample in M has similarity 1
  // with all of M and 0 (clamped to 1e-6 by the harmonic mean) with the background.
  const PatchGrid grid = fakes::PixelGrid(kW, kH, [](int x, int y) {
    return x >= 2 && x < 10 && y >= 2 && y < 10 ? kBody : kBackground;
  });
  const Mask m = Rect(kW, kH, 2, 2, 10, 10);
  ScriptSegmenter s;
  s.points = [&](const std::vector<Point>&) { return std::vector<Instance>{Inst(m, 0.9)}; };
  TracedSegmenter ts(s, kW, kH, nullptr);
  auto p = MakePointPrompt(m, BoxOf(m), grid, ts, {}, nullptr);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->samples.size(), 5u);
  for (const Point& pt : p->samples) EXPECT_TRUE(m.get(int(pt.x), int(pt.y)));
  // Peaks: all of M ties at 1, taken row-major at least 0.25 * 8 = 2 px apart: (2.5, 2.5),
  // (4.5, 2.5), (6.5, 2.5). Negative: the background pixel nearest (2.5, 2.5); (2,1) and (1,2)
  // tie at distance 1 and (2,1) comes first in row-major order.
  const std::vector<Point> want = {
      {2.5, 2.5, true}, {4.5, 2.5, true}, {6.5, 2.5, true}, {2.5, 1.5, false}};
  EXPECT_EQ(p->points, want);
  ASSERT_EQ(s.point_calls.size(), 1u);
  EXPECT_EQ(s.point_calls[0], want);
  EXPECT_EQ(p->mask, m);
  // Seeded: the same seed draws the same samples, another seed others.
  auto again = MakePointPrompt(m, BoxOf(m), grid, ts, {}, nullptr);
  EXPECT_EQ(again->samples, p->samples);
  MsrOptions other;
  other.seed = 99;
  EXPECT_NE(MakePointPrompt(m, BoxOf(m), grid, ts, other, nullptr)->samples, p->samples);
}

TEST(TarotMsr, RunRefinesThenStops) {
  // ERI mask M = [2,10)x[2,10); the point prompt's Q = [2,14)x[2,10) (under-segmented M).
  // Round 1: under -> positive (11.5, 6) appended, SegmentPoints with all points returns Q.
  // Round 2: M = Q, both regions empty -> keep.
  const Mask m = Rect(kW, kH, 2, 2, 10, 10), q = Rect(kW, kH, 2, 2, 14, 10);
  ScriptSegmenter s;
  s.points = [&](const std::vector<Point>&) { return std::vector<Instance>{Inst(q, 0.9)}; };
  ScriptReasoner r;
  CallTrace trace;
  TracedSegmenter ts(s, kW, kH, &trace);
  TracedReasoner tr(r, &trace);
  MsrOptions spec_steps;  // steps 1-5 only (step 6 is tested below)
  spec_steps.accept_by_compare = false;
  auto res = RunMsr(m, BoxOf(m), "q", Scene(), ts, tr, spec_steps, &trace);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->mask, q);
  ASSERT_EQ(res->steps.size(), 2u);
  EXPECT_EQ(res->steps[0].branch, MsrBranch::kUnder);
  EXPECT_EQ(res->steps[1].branch, MsrBranch::kKeep);
  ASSERT_EQ(s.point_calls.size(), 2u);
  std::vector<Point> all = res->prompt.points;
  all.push_back(Point{11.5, 6.0, true});
  EXPECT_EQ(s.point_calls[1], all);
  EXPECT_EQ(res->points, all);
  EXPECT_EQ(trace.Calls("segmenter"), 2);
  EXPECT_EQ(trace.Calls("reasoner"), 1);  // one JudgeRegion
  // Similarity maps: the point prompt's and S_Q of round 1.
  EXPECT_EQ(trace.Calls("features"), 2);
}

TEST(TarotMsr, EmptyInputsAndDisjointQ) {
  ScriptSegmenter s;
  ScriptReasoner r;
  TracedSegmenter ts(s, kW, kH, nullptr);
  TracedReasoner tr(r, nullptr);
  // An empty ERI mask: nothing to refine, no calls.
  auto empty = RunMsr(Mask(kW, kH), Box{}, "q", Scene(), ts, tr, {}, nullptr);
  EXPECT_TRUE(empty->mask.none());
  EXPECT_TRUE(s.point_calls.empty());
  // The segmenter finds nothing for the points: keep M.
  const Mask m = Rect(kW, kH, 2, 2, 10, 10);
  EXPECT_EQ(RunMsr(m, BoxOf(m), "q", Scene(), ts, tr, {}, nullptr)->mask, m);
  // Q disjoint from M: the empty mask (the authors' rule).
  s.points = [&](const std::vector<Point>&) {
    return std::vector<Instance>{Inst(Rect(kW, kH, 15, 15, 19, 19), 0.9)};
  };
  MsrOptions spec_steps;
  spec_steps.accept_by_compare = false;
  auto disjoint = RunMsr(m, BoxOf(m), "q", Scene(), ts, tr, spec_steps, nullptr);
  EXPECT_TRUE(disjoint->mask.none());
  EXPECT_EQ(disjoint->steps.at(0).branch, MsrBranch::kEmpty);
  // Bad options are named.
  MsrOptions bad;
  bad.rounds = -1;
  auto st = RunMsr(m, BoxOf(m), "q", Scene(), ts, tr, bad, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("msr.rounds"), std::string::npos);
}

TEST(TarotMsr, TheComparatorDecidesBetweenTheRefinedAndTheEriMask) {
  // The RunRefinesThenStops setting (under-segmented M refined to Q), with step 6 on: the
  // reasoner's Compare(query, M, refined) is asked once; answer 1 keeps the refined mask,
  // answer 0 returns M and marks the result reverted.
  const Mask m = Rect(kW, kH, 2, 2, 10, 10), q = Rect(kW, kH, 2, 2, 14, 10);
  ScriptSegmenter s;
  s.points = [&](const std::vector<Point>&) { return std::vector<Instance>{Inst(q, 0.9)}; };
  for (const int answer : {1, 0}) {
    ScriptReasoner r;
    r.compare_answer = answer;
    CallTrace trace;
    TracedSegmenter ts(s, kW, kH, &trace);
    TracedReasoner tr(r, &trace);
    auto res = RunMsr(m, BoxOf(m), "q", Scene(), ts, tr, {}, &trace);
    ASSERT_TRUE(res.ok());
    EXPECT_EQ(res->mask, answer == 1 ? q : m);
    EXPECT_EQ(res->reverted, answer == 0);
    EXPECT_EQ(trace.Calls("reasoner"), 2);  // JudgeRegion, then Compare
  }
  // The disjoint case: the empty result is compared too; answer 0 keeps M.
  s.points = [&](const std::vector<Point>&) {
    return std::vector<Instance>{Inst(Rect(kW, kH, 15, 15, 19, 19), 0.9)};
  };
  ScriptReasoner r;
  TracedSegmenter ts(s, kW, kH, nullptr);
  TracedReasoner tr(r, nullptr);
  auto kept = RunMsr(m, BoxOf(m), "q", Scene(), ts, tr, {}, nullptr);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->mask, m);
  EXPECT_TRUE(kept->reverted);
  EXPECT_EQ(kept->steps.at(0).branch, MsrBranch::kEmpty);
}

TEST(TarotMsr, TheAreaThresholdIsAFractionOfTheImageOrOfTheMask) {
  // M = [2,10)x[2,10) (64 px) and Q = M plus a 2x8 strip (16 px) in a 20x20 image (400 px):
  // 16 px is 4% of the image and 25% of M. Image-relative at 5%: keep; mask-relative at 10%:
  // the under-segmentation branch.
  const Mask m = Rect(kW, kH, 2, 2, 10, 10), q = Rect(kW, kH, 2, 2, 12, 10);
  ScriptReasoner r;
  TracedReasoner tr(r, nullptr);
  MsrOptions image;
  image.area_of = AreaOf::kImage;
  image.area_fraction = 0.05;
  auto kept = RefineStep(m, q, Scene(), "q", tr, image, nullptr);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->branch, MsrBranch::kKeep);
  EXPECT_EQ(kept->why, "small regions");
  MsrOptions mask;
  mask.area_of = AreaOf::kMask;
  mask.area_fraction = 0.1;
  auto under = RefineStep(m, q, Scene(), "q", tr, mask, nullptr);
  ASSERT_TRUE(under.ok());
  EXPECT_EQ(under->branch, MsrBranch::kUnder);
  EXPECT_EQ(ParseAreaOf("mask").value(), AreaOf::kMask);
  EXPECT_NE(ParseAreaOf("box").status().message().find("msr.area_of"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tarot
