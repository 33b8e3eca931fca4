// The oracle, noisy and rule reasoners over the shared test scenes.
#include <gtest/gtest.h>

#include "tarot/backends.h"
#include "tarot/expression_generator.h"
#include "tarot/query_parser.h"
#include "tarot/rule_reasoner.h"
#include "tarot/scene_reasoner.h"
#include "tarot/test_scenes.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

std::unique_ptr<Reasoner> MakeFor(const std::string& name, const Scene& s,
                                  core::RegistryOptions options = {}) {
  auto r = MakeReasoner(name, {options, std::make_shared<Scene>(s)});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE((*r)->SetImage(s.image).ok());
  return std::move(*r);
}

// Another object's mask than the target's (empty if none).
Mask OtherMask(const Scene& s, const Target& t) {
  for (const SceneObject& o : s.objects)
    if (std::find(t.objects.begin(), t.objects.end(), o.id) == t.objects.end()) return o.mask;
  return Mask(s.width, s.height);
}

// What `text` denotes in the scene (strict evaluation of its parse).
std::optional<Target> Denotes(const Scene& s, const std::string& text) {
  const ParseResult r = ParseQuery(text);
  if (!r.ok) return std::nullopt;
  auto t = EvaluateInScene(s, r.program);
  if (!t.ok()) return std::nullopt;
  return *t;
}

TEST(OracleReasoner, AnswersEveryQuestionRight) {
  int checked = 0;
  for (const Scene& s : TestScenes()) {
    auto oracle = MakeFor("oracle", s);
    auto seg = MakeSegmenter("synthetic", {{}, std::make_shared<Scene>(s)});
    ASSERT_TRUE((*seg)->SetImage(s.image).ok());
    for (const Expression& e : s.expressions) {
      const Mask truth = TargetMask(s, e.target);
      const Mask other = OtherMask(s, e.target);
      auto parsed = oracle->Parse(e.text);
      ASSERT_TRUE(parsed.ok());
      EXPECT_EQ(parsed->target_name, ToParsedQuery(e.program).target_name) << e.text;
      EXPECT_EQ(parsed->scope, ToParsedQuery(e.program).scope) << e.text;
      auto box = oracle->Ground(e.text);
      ASSERT_TRUE(box.ok() && box->has_value()) << e.text;
      EXPECT_EQ(**box, BoxOf(truth)) << e.text;
      EXPECT_TRUE(*oracle->Check(e.text, truth)) << e.text;
      EXPECT_FALSE(*oracle->Check(e.text, other)) << e.text;
      EXPECT_EQ(*oracle->Compare(e.text, truth, other), 0) << e.text;
      EXPECT_EQ(*oracle->Compare(e.text, other, truth), 1) << e.text;
      EXPECT_TRUE(*oracle->JudgeRegion(e.text, truth, truth)) << e.text;
      EXPECT_FALSE(*oracle->JudgeRegion(e.text, truth, other)) << e.text;
      // The description and the long variant denote the target on their own.
      auto d = oracle->Describe(e.text, *parsed, {});
      ASSERT_TRUE(d.ok());
      if (e.target.objects.size() == 1) {
        EXPECT_EQ(Denotes(s, *d), std::optional<Target>(e.target)) << e.text << " -> " << *d;
        auto v = oracle->MakeVariants(*d);
        EXPECT_EQ(Denotes(s, v->long_text), std::optional<Target>(e.target))
            << e.text << " -> " << v->long_text;
        // The first noun phrase makes the segmenter return exactly the target.
        auto phrases = oracle->NounPhrases(*d, 3);
        ASSERT_FALSE(phrases->empty()) << e.text;
        for (const std::string& p : *phrases) {
          const size_t words = Words(p).size();
          EXPECT_GE(words, 2u) << p;
          EXPECT_LE(words, 8u) << p;
        }
        // With a unique spec, the first noun phrase segments to exactly the target; else its
        // instances include it.
        auto inst = (*seg)->SegmentText(phrases->front());
        const bool unique = MinimalSpec(s, e.target.objects[0], e.target.part).has_value();
        if (unique) {
          ASSERT_EQ(inst->size(), 1u) << e.text << " -> " << *d << " -> " << phrases->front();
        }
        bool has = false;
        for (const Instance& in : *inst) has = has || in.mask == truth;
        EXPECT_TRUE(has) << e.text << " -> " << *d << " -> " << phrases->front();
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(OracleReasoner, UnknownQueriesFallBackToTheParser) {
  const Scene& s = TestScenes()[0];
  auto oracle = MakeFor("oracle", s);
  for (const SceneObject& o : s.objects) {
    const std::string q = "please find the " + o.size + " " + o.colour + " " + o.category;
    const Program p{{o.category, o.colour, o.size, 0, Axis::kNone}, "", false, Relation::kNone, {}};
    auto t = EvaluateInScene(s, p);
    if (!t.ok()) continue;
    EXPECT_EQ(**oracle->Ground(q), BoxOf(TargetMask(s, *t))) << q;
  }
  EXPECT_FALSE(oracle->Ground("something nice")->has_value());
  EXPECT_FALSE(oracle->Parse("something nice")->ok);
  auto rephrased = oracle->Rephrase("red circle", {"red disc"});
  ASSERT_TRUE(rephrased->has_value());
  EXPECT_NE(**rephrased, "red circle");
  EXPECT_NE(**rephrased, "red disc");
}

TEST(NoisyReasoner, ZeroRateIsTheOracleAndRatesAreSeeded) {
  int total = 0, wrong_half = 0, same_seed_differs = 0, other_seed_differs = 0;
  for (const Scene& s : TestScenes()) {
    auto oracle = MakeFor("oracle", s);
    auto zero = MakeFor("noisy", s, {{"noisy.rate", "0"}});
    auto half = MakeFor("noisy", s, {{"noisy.rate", "0"}, {"noisy.hallucination", "0.3"}});
    auto again = MakeFor("noisy", s, {{"noisy.rate", "0"}, {"noisy.hallucination", "0.3"}});
    auto other = MakeFor(
        "noisy", s, {{"noisy.rate", "0"}, {"noisy.hallucination", "0.3"}, {"noisy.seed", "9"}});
    for (const Expression& e : s.expressions) {
      ++total;
      const auto truth = oracle->Ground(e.text);
      EXPECT_EQ(*zero->Ground(e.text), *truth) << e.text;
      const auto h = half->Ground(e.text);
      wrong_half += *h != *truth;
      same_seed_differs += *again->Ground(e.text) != *h;
      other_seed_differs += *other->Ground(e.text) != *h;
    }
  }
  EXPECT_EQ(same_seed_differs, 0);
  EXPECT_GT(other_seed_differs, 0);
  const double rate = static_cast<double>(wrong_half) / total;
  EXPECT_GT(rate, 0.2) << wrong_half << " of " << total;
  EXPECT_LT(rate, 0.4) << wrong_half << " of " << total;
}

TEST(NoisyReasoner, EachSkillCorruptsItsQueries) {
  const std::pair<const char*, Tier> skills[] = {{"noisy.attribute", Tier::kE1},
                                                 {"noisy.ordinal", Tier::kE2},
                                                 {"noisy.relation", Tier::kE3},
                                                 {"noisy.knowledge", Tier::kI1}};
  for (const auto& [key, tier] : skills) {
    int n = 0, wrong = 0;
    for (const Scene& s : TestScenes()) {
      auto oracle = MakeFor("oracle", s);
      auto noisy = MakeFor("noisy", s, {{"noisy.rate", "0"}, {key, "1"}});
      for (const Expression& e : s.expressions) {
        if (e.tier != tier || e.program.plural) continue;
        ++n;
        wrong += *noisy->Ground(e.text) != *oracle->Ground(e.text);
        // The belief is consistent: Check agrees with Ground's target, not the truth.
        if (*noisy->Ground(e.text) != *oracle->Ground(e.text)) {
          EXPECT_FALSE(*noisy->Check(e.text, TargetMask(s, e.target))) << key << " " << e.text;
        }
      }
    }
    EXPECT_GT(wrong, n / 2) << key << ": " << wrong << " of " << n;
  }
}

TEST(NoisyReasoner, JudgeAndBoxErrors) {
  const Scene& s = TestScenes()[0];
  auto judge = MakeFor("noisy", s, {{"noisy.rate", "0"}, {"noisy.judge", "1"}});
  auto box = MakeFor("noisy", s, {{"noisy.rate", "0"}, {"noisy.box", "1"}});
  auto oracle = MakeFor("oracle", s);
  for (const Expression& e : s.expressions) {
    const Mask truth = TargetMask(s, e.target);
    EXPECT_FALSE(*judge->Check(e.text, truth));
    EXPECT_EQ(*judge->Compare(e.text, truth, OtherMask(s, e.target)), 1);
    EXPECT_NE(*box->Ground(e.text), *oracle->Ground(e.text));
  }
}

// A swapped box is the box of another object, the nearest of the target's category when there is
// one; a jittered box (box_swap = 0) still overlaps the target's.
TEST(NoisyReasoner, BoxErrorsSwapToTheNearestLookAlikeOrJitter) {
  int swapped = 0, same_category = 0;
  for (const Scene& s : TestScenes()) {
    auto swap =
        MakeFor("noisy", s, {{"noisy.rate", "0"}, {"noisy.box", "1"}, {"noisy.box_swap", "1"}});
    auto jitter =
        MakeFor("noisy", s, {{"noisy.rate", "0"}, {"noisy.box", "1"}, {"noisy.box_swap", "0"}});
    for (const Expression& e : s.expressions) {
      if (e.target.objects.size() != 1 || !e.target.part.empty()) continue;
      const SceneObject& t = s.objects[e.target.objects[0]];
      auto got = swap->Ground(e.text);
      ASSERT_TRUE(got.ok() && got->has_value()) << e.text;
      const SceneObject* other = nullptr;
      for (const SceneObject& o : s.objects)
        if (o.id != t.id && BoxOf(o.mask) == **got) other = &o;
      ASSERT_NE(other, nullptr) << e.text;
      ++swapped;
      bool look_alike = false;
      for (const SceneObject& o : s.objects) look_alike |= o.id != t.id && o.category == t.category;
      EXPECT_EQ(other->category == t.category, look_alike) << e.text;
      same_category += other->category == t.category;
      auto j = jitter->Ground(e.text);
      ASSERT_TRUE(j.ok() && j->has_value());
      EXPECT_GT(BoxIou(**j, BoxOf(t.mask)), 0) << e.text;
    }
  }
  EXPECT_GT(swapped, 20);
  EXPECT_GT(same_category, 5);
}

// The rule reasoner reads every tier's grammar: its target contract equals the program's.
TEST(RuleReasoner, ParsesEveryTier) {
  std::map<Tier, int> n;
  for (const Scene& s : TestScenes()) {
    auto rule = MakeFor("rule", s);
    for (const Expression& e : s.expressions) {
      auto p = rule->Parse(e.text);
      ASSERT_TRUE(p.ok() && p->ok) << e.text;
      const ParsedQuery want = ToParsedQuery(e.program);
      EXPECT_EQ(p->target_name, want.target_name) << e.text;
      EXPECT_EQ(p->scope, want.scope) << e.text;
      EXPECT_EQ(p->refer_objects, want.refer_objects) << e.text;
      EXPECT_EQ(p->relation, want.relation) << e.text;
      EXPECT_EQ(p->ordinal, want.ordinal) << e.text;
      EXPECT_EQ(p->ordinal_axis, want.ordinal_axis) << e.text;
      ++n[e.tier];
    }
  }
  EXPECT_EQ(n.size(), static_cast<size_t>(kTierCount));
}

// Pixels only: on unoccluded scenes the detections find most objects with the right category
// and colour (a loose bar on a fixed seed; the benchmark measures the rest).
TEST(RuleReasoner, PixelJudgesFindMostObjects) {
  int objects = 0, found = 0, grounded = 0, whole = 0;
  for (const Scene& s : TestScenes()) {
    RuleReasoner rule;
    ASSERT_TRUE(rule.SetImage(s.image).ok());
    for (const SceneObject& o : s.objects) {
      ++objects;
      for (const Detection& d : rule.detections()) {
        if (d.category == o.category && d.colour == o.colour && MaskIou(d.mask, o.mask) > 0.8) {
          ++found;
          break;
        }
      }
    }
    for (const Expression& e : s.expressions) {
      if (e.target.objects.size() != 1 || !e.target.part.empty()) continue;
      ++whole;
      auto box = rule.Ground(e.text);
      if (box->has_value() && BoxIou(**box, BoxOf(TargetMask(s, e.target))) > 0.5) ++grounded;
    }
  }
  EXPECT_GT(found, objects * 6 / 10) << found << " of " << objects;
  EXPECT_GT(grounded, whole / 3) << grounded << " of " << whole;
}

TEST(RuleReasoner, JudgesWithAndWithoutADetection) {
  Scene s;
  s.width = s.height = 64;
  s.background = {{240, 240, 240}, {240, 240, 240}, 2, 1};
  SceneObject o;
  o.category = "circle";
  o.colour = "red";
  o.size = "large";
  o.cx = o.cy = 32;
  o.half_size_px = 20;
  s.objects.push_back(o);
  RenderScene(s);
  const Mask& circle = s.objects[0].mask;
  const Mask none(64, 64);
  RuleReasoner rule;
  ASSERT_TRUE(rule.SetImage(s.image).ok());
  ASSERT_EQ(rule.detections().size(), 1u);
  EXPECT_EQ(rule.detections()[0].category, "circle");
  EXPECT_EQ(rule.detections()[0].colour, "red");
  EXPECT_EQ(rule.detections()[0].size, "large");
  EXPECT_TRUE(*rule.Check("the red circle", circle));
  EXPECT_EQ(**rule.Ground("the red disc"), BoxOf(circle));
  // No detection of a square: the judges fall back to colour and silhouette statistics.
  EXPECT_FALSE(rule.Ground("the red square")->has_value());
  EXPECT_FALSE(*rule.Check("the red square", circle));
  EXPECT_TRUE(*rule.Check("the red object on the table", circle));
  EXPECT_FALSE(*rule.Check("the blue object", circle));
  EXPECT_EQ(*rule.Compare("the red square", none, circle), 1);
  const Mask left = circle & BoxMask(64, 64, Box{0, 0, 32, 64});
  EXPECT_TRUE(*rule.JudgeRegion("the red square", circle, left));
  EXPECT_FALSE(*rule.JudgeRegion("the red square", circle, BoxMask(64, 64, Box{0, 0, 8, 8})));
  EXPECT_FALSE(*rule.JudgeRegion("the red square", circle, none));
  RuleReasoner fresh;
  EXPECT_EQ(fresh.Parse("the star").status().code(), core::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tessera::tarot
