// The A/B comparator's shortcuts and the final vote (our choice) on a hand-computed case.
#include "tarot/final_vote.h"

#include <gtest/gtest.h>

#include "tarot/tarot_test_util.h"

namespace tessera::tarot {
namespace {

using fakes::Rect;
using fakes::ScriptReasoner;

Mask Span(int a, int b) { return Rect(20, 1, a, 0, b, 1); }

TEST(TarotFinalVote, ComparatorShortcuts) {
  ScriptReasoner r;
  r.compare_answer = 1;
  TracedReasoner tr(r, nullptr);
  std::string how;
  EXPECT_EQ(*CompareMasks("q", Mask(20, 1), Span(0, 4), tr, 0.8, &how), 1);
  EXPECT_EQ(how, "a empty");
  EXPECT_EQ(*CompareMasks("q", Span(0, 4), Mask(20, 1), tr, 0.8, &how), 0);
  EXPECT_EQ(how, "b empty");
  EXPECT_EQ(*CompareMasks("q", Span(0, 4), Span(0, 4), tr, 0.8, &how), 0);
  EXPECT_EQ(how, "equal");
  // IoU 9/10 > 0.8: the smaller mask wins without asking.
  EXPECT_EQ(*CompareMasks("q", Span(0, 10), Span(0, 9), tr, 0.8, &how), 1);
  EXPECT_EQ(*CompareMasks("q", Span(0, 9), Span(0, 10), tr, 0.8, &how), 0);
  EXPECT_EQ(how, "iou>0.8 smaller");
  EXPECT_EQ(r.Count("Compare"), 0);
  // IoU 8/10 = 0.8 is not > 0.8: the reasoner decides.
  EXPECT_EQ(*CompareMasks("q", Span(0, 10), Span(0, 8), tr, 0.8, &how), 1);
  EXPECT_EQ(how, "reasoner");
  EXPECT_EQ(r.Count("Compare"), 1);
}

TEST(TarotFinalVote, WeighsThenComparesTopTwo) {
  // Candidates c0 text [0,8) 0.9, c1 text [0,10) 0.5, c2 box [0,10) 0.9, an empty c3; only the
  // full box [0,10) is valid and is the anchor.
  std::vector<Candidate> cands = {{Span(0, 8), 0.9, CandidateSource::kText, "a", 1},
                                  {Span(0, 10), 0.5, CandidateSource::kText, "b", 2},
                                  {Span(0, 10), 0.9, CandidateSource::kBox, "full", 0},
                                  {Mask(20, 1), 1.0, CandidateSource::kText, "c", 3}};
  BoxEvidenceSet boxes;
  boxes[0] = BoxEvidence{true, Span(0, 10), 0.9};
  // I vs full: c0 0.8, c1 1, c2 1. support: c0 = mean(0.8, 0.8) = 0.8, c1 = mean(0.8, 1) = 0.9,
  // c2 = 0.9. w0 = 0.81 * 0.64 * 0.9 * 0.9 = 0.419904; w1 = 0.25 * 1 * 1.0 * 1.1 = 0.275;
  // w2 = 0.81 * 1 * 1.0 * 1.1 = 0.891. Top two: c2, c0; IoU 0.8 is not > 0.8 -> Compare.
  for (int answer : {0, 1}) {
    ScriptReasoner r;
    r.compare_answer = answer;
    TracedReasoner tr(r, nullptr);
    auto v = FinalVote(cands, boxes, 0, "q", tr);
    ASSERT_TRUE(v.ok());
    EXPECT_NEAR(v->weights.weight[0], 0.419904, 1e-12);
    EXPECT_NEAR(v->weights.weight[1], 0.275, 1e-12);
    EXPECT_NEAR(v->weights.weight[2], 0.891, 1e-12);
    EXPECT_DOUBLE_EQ(v->weights.weight[3], 0.0);
    EXPECT_EQ(v->first, 2);
    EXPECT_EQ(v->second, 0);
    EXPECT_EQ(v->how, "reasoner");
    EXPECT_EQ(v->chosen, answer == 0 ? 2 : 0);
  }
}

TEST(TarotFinalVote, NoBoxSingleAndNone) {
  ScriptReasoner r;
  TracedReasoner tr(r, nullptr);
  // No box (text-only): box factors are 1, w = c^2 (0.1 + support) 1.1.
  // c0 [0,8) 0.5, c1 [0,10) 1.0: support 0.8 each; w0 = 0.25*0.9*1.1, w1 = 1*0.9*1.1.
  // Top two c1, c0 with IoU 0.8 -> Compare (answer 0 -> c1).
  std::vector<Candidate> two = {{Span(0, 8), 0.5, CandidateSource::kText, "a", 1},
                                {Span(0, 10), 1.0, CandidateSource::kText, "b", 2}};
  auto v = FinalVote(two, BoxEvidenceSet{}, -1, "q", tr);
  ASSERT_TRUE(v.ok());
  EXPECT_NEAR(v->weights.weight[0], 0.2475, 1e-12);
  EXPECT_NEAR(v->weights.weight[1], 0.99, 1e-12);
  EXPECT_EQ(v->chosen, 1);
  auto one = FinalVote({two[0]}, BoxEvidenceSet{}, -1, "q", tr);
  EXPECT_EQ(one->chosen, 0);
  EXPECT_EQ(one->how, "single");
  auto none = FinalVote({}, BoxEvidenceSet{}, -1, "q", tr);
  EXPECT_EQ(none->chosen, -1);
  EXPECT_EQ(r.Count("Compare"), 1);
}

}  // namespace
}  // namespace tessera::tarot
