// The box vote on hand-computed cases. Masks are 1-pixel-high runs [a, b) of a 20 x 1 image, so
// every IoU is a ratio of run lengths and each expected number below is worked out by hand.
#include "tarot/box_vote.h"

#include <gtest/gtest.h>

#include "tarot/tarot_test_util.h"

namespace tessera::tarot {
namespace {

using fakes::Rect;

Mask Seg(int a, int b) { return Rect(20, 1, a, 0, b, 1); }

BoxEvidenceSet Boxes(std::optional<std::pair<Mask, double>> full,
                     std::optional<std::pair<Mask, double>> shrt,
                     std::optional<std::pair<Mask, double>> lng) {
  BoxEvidenceSet s;
  const std::optional<std::pair<Mask, double>>* in[3] = {&full, &shrt, &lng};
  for (int m = 0; m < 3; ++m) {
    if (*in[m]) s[m] = BoxEvidence{true, (*in[m])->first, (*in[m])->second};
  }
  return s;
}

TEST(TarotBoxVote, ThreePromptsPickShort) {
  // Boxes: full [0,10) score 0.9, short [0,8) 0.8, long [0,12) 0.7.
  const BoxEvidenceSet boxes = Boxes({{Seg(0, 10), 0.9}}, {{Seg(0, 8), 0.8}}, {{Seg(0, 12), 0.7}});
  const std::vector<TextVoter> voters = {
      {Seg(0, 8), 0.9, 2},   // v0
      {Seg(0, 8), 0.8, 3},   // v1
      {Seg(0, 10), 0.5, 4},  // v2
      {Seg(0, 12), 1.0, 1},  // the full description: not a voter (prompt index < 2)
      {Seg(0, 8), 0.9, 2},   // duplicate of v0 (same prompt, same mask): dropped
      {Mask(20, 1), 0.9, 2}  // empty: dropped
  };
  const BoxVoteResult r = BoxVote(boxes, voters);
  ASSERT_EQ(r.voters, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(r.anchor, 0);
  // I: [0,8) vs full 8/10 = 0.8, vs short 1, vs long 8/12; [0,10) vs full 1, short 0.8,
  // long 10/12.
  EXPECT_DOUBLE_EQ(r.weights.iou[0][2], 8.0 / 12.0);
  // support: v0 = mean(IoU(v0,v1) = 1, IoU(v0,v2) = 0.8) = 0.9; v1 = 0.9; v2 = mean(0.8, 0.8).
  EXPECT_NEAR(r.weights.support[0], 0.9, 1e-12);
  EXPECT_NEAR(r.weights.support[1], 0.9, 1e-12);
  EXPECT_NEAR(r.weights.support[2], 0.8, 1e-12);
  // w0 = 0.9^2 * 1^2 * (0.1 + 0.9) * (0.1 + 0.8) = 0.729
  // w1 = 0.8^2 * 1 * 1.0 * 0.9 = 0.576
  // w2 = 0.5^2 * 1 * (0.1 + 0.8) * (0.1 + 1) = 0.2475;  W = 1.5525
  EXPECT_NEAR(r.weights.weight[0], 0.729, 1e-12);
  EXPECT_NEAR(r.weights.weight[1], 0.576, 1e-12);
  EXPECT_NEAR(r.weights.weight[2], 0.2475, 1e-12);
  // vote_full  = (0.729*0.8 + 0.576*0.8 + 0.2475*1) / W        = 1.2915 / 1.5525
  // vote_short = (0.729 + 0.576 + 0.2475*0.8) / W              = 1.503 / 1.5525
  // vote_long  = (0.729*2/3 + 0.576*2/3 + 0.2475*10/12) / W    = 1.07625 / 1.5525
  EXPECT_NEAR(r.votes[0], 1.2915 / 1.5525, 1e-12);
  EXPECT_NEAR(r.votes[1], 1.503 / 1.5525, 1e-12);
  EXPECT_NEAR(r.votes[2], 1.07625 / 1.5525, 1e-12);
  // The anchor is confident (0.9 >= 0.85): short and long overlap it by 0.8 and 10/12 (>= 0.25);
  // long's vote 0.693 < the anchor's 0.832, so long is not eligible.
  EXPECT_TRUE(r.eligible[0]);
  EXPECT_TRUE(r.eligible[1]);
  EXPECT_FALSE(r.eligible[2]);
  // totals: full 0.8319 + 0.45 = 1.2819, short 0.9681 + 0.4 = 1.3681 -> short.
  EXPECT_NEAR(r.totals[0], 1.2915 / 1.5525 + 0.45, 1e-12);
  EXPECT_NEAR(r.totals[1], 1.503 / 1.5525 + 0.4, 1e-12);
  EXPECT_EQ(r.chosen, 1);
}

TEST(TarotBoxVote, ConfidentAnchorNeedsOverlap) {
  // full [0,4), short [10,18) score 0.8; both voters sit on short: I = (0, 1), support 1 each,
  // w = 1 * 1 * 1.1 * (0.1 + 0) = 0.11 each; vote_full = 0, vote_short = 1.
  const std::vector<TextVoter> voters = {{Seg(10, 18), 1.0, 2}, {Seg(10, 18), 1.0, 3}};
  {
    // Anchor score 0.9 >= 0.85: short's mask IoU with full is 0 < 0.25, not eligible.
    const BoxVoteResult r = BoxVote(Boxes({{Seg(0, 4), 0.9}}, {{Seg(10, 18), 0.8}}, {}), voters);
    EXPECT_NEAR(r.weights.weight[0], 0.11, 1e-12);
    EXPECT_DOUBLE_EQ(r.votes[0], 0.0);
    EXPECT_DOUBLE_EQ(r.votes[1], 1.0);
    EXPECT_FALSE(r.eligible[1]);
    EXPECT_FALSE(r.eligible[2]);  // no long box
    EXPECT_EQ(r.chosen, 0);
  }
  {
    // Anchor score 0.8 < 0.85: no overlap rule; totals full 0 + 0.4, short 1 + 0.4 -> short.
    const BoxVoteResult r = BoxVote(Boxes({{Seg(0, 4), 0.8}}, {{Seg(10, 18), 0.8}}, {}), voters);
    EXPECT_TRUE(r.eligible[1]);
    EXPECT_DOUBLE_EQ(r.totals[1], 1.4);
    EXPECT_EQ(r.chosen, 1);
  }
}

TEST(TarotBoxVote, OnePromptSupportIsOneAndCountDivides) {
  // Two instances of prompt 2: support 1 (only one prompt), count 2.
  // Boxes full [0,10) 0.5, short [0,8) 0.5.
  // v0 [0,8) c 1.0: I = (0.8, 1), w0 = 1 * 1 * 1.1 * 0.9 / 2 = 0.495
  // v1 [0,10) c 0.5: I = (1, 0.8), w1 = 0.25 * 1 * 1.1 * 1.1 / 2 = 0.15125;  W = 0.64625
  // vote_full = (0.495*0.8 + 0.15125) / W = 0.54725 / W; vote_short = (0.495 + 0.121) / W.
  const BoxVoteResult r = BoxVote(Boxes({{Seg(0, 10), 0.5}}, {{Seg(0, 8), 0.5}}, {}),
                                  {{Seg(0, 8), 1.0, 2}, {Seg(0, 10), 0.5, 2}});
  EXPECT_DOUBLE_EQ(r.weights.support[0], 1.0);
  EXPECT_NEAR(r.weights.weight[0], 0.495, 1e-12);
  EXPECT_NEAR(r.weights.weight[1], 0.15125, 1e-12);
  EXPECT_NEAR(r.votes[0], 0.54725 / 0.64625, 1e-12);
  EXPECT_NEAR(r.votes[1], 0.616 / 0.64625, 1e-12);
  EXPECT_EQ(r.chosen, 1);  // 0.9532 + 0.25 > 0.8468 + 0.25
}

TEST(TarotBoxVote, NoVotersNoBoxesAndTies) {
  // No voters: the anchor, which is the first valid method (full missing -> short).
  const BoxVoteResult a = BoxVote(Boxes({}, {{Seg(0, 8), 0.3}}, {{Seg(0, 12), 0.99}}), {});
  EXPECT_EQ(a.anchor, 1);
  EXPECT_EQ(a.chosen, 1);
  EXPECT_DOUBLE_EQ(a.votes[2], 0.0);
  // No valid box: nothing chosen.
  EXPECT_EQ(BoxVote(Boxes({}, {}, {}), {{Seg(0, 8), 1.0, 2}}).chosen, -1);
  // Identical boxes and scores: equal totals, the lower method wins.
  const BoxVoteResult t = BoxVote(Boxes({{Seg(0, 8), 0.5}}, {{Seg(0, 8), 0.5}}, {}),
                                  {{Seg(0, 6), 0.7, 2}, {Seg(2, 8), 0.7, 3}});
  EXPECT_DOUBLE_EQ(t.totals[0], t.totals[1]);
  EXPECT_EQ(t.chosen, 0);
}

}  // namespace
}  // namespace tessera::tarot
