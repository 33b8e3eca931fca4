// ERI over scripted backends: what each step asks and keeps, and the ablation switches.
#include "tarot/eri.h"

#include <gtest/gtest.h>

#include "tarot/tarot_test_util.h"

namespace tessera::tarot {
namespace {

using fakes::CupScene;
using fakes::Inst;
using fakes::Rect;

core::StatusOr<EriResult> Eri(CupScene& s, const EriOptions& o, CallTrace* trace = nullptr) {
  TracedSegmenter seg(s.seg, CupScene::kW, CupScene::kH, trace);
  TracedReasoner rsn(s.rsn, trace);
  return RunEri("the cup above the plate", CupScene::kW, CupScene::kH, seg, rsn, o, trace);
}

TEST(TarotEri, FullFlowOnTheCupScene) {
  CupScene s;
  CallTrace trace;
  auto r = Eri(s, {}, &trace);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->description, "the cup above the plate");
  // Step 2: full and short boxes give B; the long box (the whole image) keeps nothing
  // (B's bbox IoU 36/800 < 0.3).
  EXPECT_TRUE(r->box_evidence[0].valid);
  EXPECT_TRUE(r->box_evidence[1].valid);
  EXPECT_FALSE(r->box_evidence[2].valid);
  EXPECT_EQ(r->box_evidence[0].mask, s.b);
  // Step 4: the description failed once and was rephrased; "cup near plate" failed with no
  // rephrasing left. Text candidates: prompt 1 (rephrased) B, prompt 2 B, prompt 3 A (best
  // score, ties to the earlier instance).
  EXPECT_EQ(s.seg.text_calls,
            (std::vector<std::string>{"plate", "the cup above the plate", "cup over plate",
                                      "middle cup", "cup", "cup near plate"}));
  EXPECT_EQ(s.rsn.Count("Rephrase"), 2);
  EXPECT_EQ(s.rsn.rephrase_tried[0], (std::vector<std::string>{"the cup above the plate"}));
  ASSERT_EQ(r->text_candidates.size(), 3u);
  EXPECT_EQ(r->text_candidates[0].phrase, "cup over plate");
  EXPECT_EQ(r->text_candidates[0].prompt_index, 1);
  EXPECT_EQ(r->text_candidates[2].mask, s.a);
  EXPECT_EQ(r->text_instances.size(), 5u);  // 1 + 1 + 3 raw instances
  // Steps 5-6: both valid boxes hold B, the vote keeps the anchor (full); A's candidate is
  // dropped (bbox IoU 0 with B's), the box mask is appended; the final vote sees B three times.
  EXPECT_EQ(r->chosen_box_method, 0);
  EXPECT_EQ(r->chosen_box, BoxOf(s.b));
  ASSERT_EQ(r->candidates.size(), 3u);
  EXPECT_EQ(r->candidates[2].source, CandidateSource::kBox);
  EXPECT_EQ(r->candidates[2].phrase, "full");
  EXPECT_EQ(r->final_vote.how, "equal");
  EXPECT_EQ(r->mask, s.b);
  // The reference overlay went to Describe.
  ASSERT_EQ(s.rsn.contexts.size(), 1u);
  ASSERT_EQ(s.rsn.contexts[0].references.size(), 1u);
  EXPECT_EQ(s.rsn.contexts[0].references[0].masks, std::vector<Mask>{s.plate});
  EXPECT_EQ(s.rsn.calls,
            (std::vector<std::string>{"Parse", "Describe", "Ground", "Variants", "Ground", "Ground",
                                      "NounPhrases", "Rephrase", "Rephrase"}));
  EXPECT_EQ(trace.Calls("eri"), 2);  // box_vote and final_vote decisions
}

TEST(TarotEri, ReferenceFilterAndOrdinalWindow) {
  const int w = 40, h = 20;
  const Mask p = Rect(w, h, 12, 10, 18, 16);
  Mask p2 = p;
  p2.set(12, 10, false);  // IoU 35/36 with p: suppressed
  const Mask q = Rect(w, h, 30, 10, 32, 12), r = Rect(w, h, 30, 10, 36, 16);
  const std::vector<Instance> kept =
      FilterReferences({Inst(p2, 0.85), Inst(q, 0.5), Inst(p, 0.9), Inst(r, 0.7)}, 0.6, 0.6);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].mask, p);  // by score: p 0.9 first, p2 suppressed, q below 0.6
  EXPECT_EQ(kept[1].mask, r);

  // Ordinal: the 3rd cup from the right among A, B, C, D = D C B A; the window of 3 around
  // rank 3 is ranks 2, 3, 4 = C, B, A.
  CupScene s;
  const Mask d = Rect(w, h, 32, 2, 38, 8);
  s.seg.text["cup"] = {Inst(s.a, 0.9), Inst(s.b, 0.9), Inst(s.c, 0.9), Inst(d, 0.9)};
  s.rsn.parsed.refer_objects.clear();
  s.rsn.parsed.ordinal = 3;
  s.rsn.parsed.ordinal_axis = "right-to-left";
  ASSERT_TRUE(Eri(s, {}).ok());
  const DescribeContext& ctx = s.rsn.contexts.at(0);
  EXPECT_EQ(ctx.ordinal_ranks, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(ctx.ordinal_masks, (std::vector<Mask>{s.c, s.b, s.a}));
}

TEST(TarotEri, RephrasingStopsAfterThreeTries) {
  CupScene s;
  s.rsn.description = "p";
  s.rsn.rephrase = {{"p", "p2"}, {"p2", "p3"}, {"p3", "p4"}};
  EriOptions o;
  o.use_boxes = false;
  o.noun_phrases = 0;
  auto r = Eri(s, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(s.seg.text_calls, (std::vector<std::string>{"plate", "p", "p2", "p3"}));
  EXPECT_EQ(s.rsn.Count("Rephrase"), 2);  // none asked after the last try
  EXPECT_EQ(s.rsn.rephrase_tried[1], (std::vector<std::string>{"p", "p2"}));
  EXPECT_EQ(r->chosen, -1);
  EXPECT_TRUE(r->mask.none());

  CupScene once;
  once.rsn.description = "p";
  once.rsn.rephrase = s.rsn.rephrase;
  o.rephrase = false;
  ASSERT_TRUE(Eri(once, o).ok());
  EXPECT_EQ(once.seg.text_calls, (std::vector<std::string>{"plate", "p"}));
  EXPECT_EQ(once.rsn.Count("Rephrase"), 0);
}

TEST(TarotEri, GroupScopeTakesTheUnion) {
  CupScene s;
  s.rsn.parsed.scope = Scope::kGroup;
  s.rsn.description = "cup";
  EriOptions o;
  o.use_boxes = false;
  o.noun_phrases = 0;
  auto r = Eri(s, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->text_candidates.size(), 1u);
  EXPECT_EQ(r->text_candidates[0].mask, s.a | s.b | s.c);
  EXPECT_DOUBLE_EQ(r->text_candidates[0].score, 0.9);
  EXPECT_EQ(r->mask, s.a | s.b | s.c);
}

TEST(TarotEri, ParseFallbackAndRepair) {
  CupScene s;
  s.rsn.parsed.ok = false;
  CallTrace trace;
  auto r = Eri(s, {}, &trace);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->parse_fallback);
  EXPECT_EQ(r->description, "the cup above the plate");  // the query
  EXPECT_EQ(s.rsn.Count("Describe"), 0);
  ASSERT_FALSE(trace.entries().empty());
  bool logged = false;
  for (const auto& e : trace.entries())
    logged |= e.component == "eri" && e.method == "parse_fallback";
  EXPECT_TRUE(logged);

  CupScene messy;
  messy.rsn.description = "  the   cup above\t the plate ";
  EXPECT_EQ(Eri(messy, {})->description, "the cup above the plate");
  CupScene blank;
  blank.rsn.description = " ";
  EXPECT_EQ(Eri(blank, {})->description, "cup");  // the target name
}

TEST(TarotEri, BoxCandidateByBboxIouThenScore) {
  CupScene s;
  const int w = CupScene::kW, h = CupScene::kH;
  const Mask x = Rect(w, h, 10, 0, 20, 10);  // bbox IoU 1 with the box
  const Mask y = Rect(w, h, 11, 1, 19, 9);   // bbox IoU 64/100
  Mask z = x;                                // same bbox as x, higher score
  z.set(15, 5, false);
  s.rsn.ground = {{"the cup above the plate", Box{10, 0, 20, 10}}};
  s.seg.box = [&](const Box&) {
    return std::vector<Instance>{Inst(y, 0.99), Inst(x, 0.5), Inst(z, 0.6)};
  };
  auto r = Eri(s, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->box_evidence[0].mask, z);
  EXPECT_DOUBLE_EQ(r->box_evidence[0].score, 0.6);
  // Short and long texts were not grounded (no entry): only the full box.
  EXPECT_FALSE(r->box_evidence[1].valid);
}

TEST(TarotEri, Ablations) {
  {
    CupScene s;  // box-only: no noun phrases, no text prompts; the anchor box alone.
    EriOptions o;
    o.use_text = false;
    auto r = Eri(s, o);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(s.rsn.Count("NounPhrases"), 0);
    EXPECT_EQ(s.seg.text_calls, std::vector<std::string>{"plate"});
    ASSERT_EQ(r->candidates.size(), 1u);
    EXPECT_EQ(r->mask, s.b);
  }
  {
    CupScene s;  // text-only: no grounding; candidates are the text ones, final vote picks.
    EriOptions o;
    o.use_boxes = false;
    auto r = Eri(s, o);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(s.rsn.Count("Ground"), 0);
    EXPECT_EQ(r->chosen_box_method, -1);
    EXPECT_EQ(r->candidates.size(), 3u);
    EXPECT_EQ(r->mask, s.b);  // B twice outweighs A once
  }
  {
    CupScene s;  // no vote: the best-score box (full/short tie -> full), best-score candidate
    EriOptions o;
    o.vote = false;
    auto r = Eri(s, o);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(s.rsn.Count("Compare"), 0);
    EXPECT_EQ(r->chosen_box_method, 0);
    EXPECT_EQ(r->candidates[r->chosen].source, CandidateSource::kBox);  // 0.95 beats 0.9
  }
  CupScene s;
  EriOptions bad;
  bad.tries_per_phrase = 0;
  auto r = Eri(s, bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("eri.tries_per_phrase"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tarot
