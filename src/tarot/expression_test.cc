#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tarot/expression_generator.h"
#include "tarot/query_parser.h"
#include "tarot/scene_generator.h"
#include "tarot/test_scenes.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

TEST(RefExpressions, EveryTierInEveryScene) {
  for (const Scene& s : TestScenes()) {
    std::map<Tier, int> n;
    for (const Expression& e : s.expressions) ++n[e.tier];
    for (Tier t : AllTiers()) EXPECT_EQ(n[t], 1) << TierName(t) << " in scene " << s.seed;
  }
}

TEST(RefExpressions, EachDenotesAUniqueNonEmptyTarget) {
  for (const Scene& s : TestScenes()) {
    std::set<std::string> texts;
    for (const Expression& e : s.expressions) {
      EXPECT_TRUE(texts.insert(e.text).second) << "duplicate text " << e.text;
      auto t = EvaluateInScene(s, e.program);
      ASSERT_TRUE(t.ok()) << e.text << ": " << t.status().ToString();
      EXPECT_EQ(*t, e.target) << e.text;
      EXPECT_FALSE(e.target.empty());
      EXPECT_GT(TargetMask(s, e.target).count(), 0) << e.text;
      if (!e.program.plural) {
        EXPECT_EQ(e.target.objects.size(), 1u) << e.text;
      }
      // The ground truth is the union of the denoted masks.
      Mask u(s.width, s.height);
      for (int id : e.target.objects) {
        const SceneObject& o = s.objects[id];
        u = u | (e.target.part.empty() ? o.mask : o.FindPart(e.target.part)->mask);
      }
      EXPECT_EQ(TargetMask(s, e.target), u);
    }
  }
}

TEST(RefExpressions, LongOnesHave15To30Words) {
  for (const Scene& s : TestScenes()) {
    for (const Expression& e : s.expressions) {
      const size_t n = Words(e.text).size();
      if (e.tier == Tier::kE4) {
        EXPECT_GE(n, 15u) << e.text;
        EXPECT_LE(n, 30u) << e.text;
      } else {
        EXPECT_LT(n, 15u) << e.text;
      }
      EXPECT_EQ(e.hops, e.tier == Tier::kI1 ? 1 : e.tier == Tier::kI2 ? 2 : 0) << e.text;
    }
  }
}

// The parser reads every generated text back to its program and its tier.
TEST(RefExpressions, ParserReadsEveryTier) {
  std::map<Tier, int> parsed;
  for (const Scene& s : TestScenes()) {
    for (const Expression& e : s.expressions) {
      const ParseResult r = ParseQuery(e.text);
      ASSERT_TRUE(r.ok) << e.text << ": " << r.error;
      EXPECT_EQ(ProgramToJson(r.program).dump(), ProgramToJson(e.program).dump()) << e.text;
      EXPECT_EQ(TierName(r.tier), std::string(TierName(e.tier))) << e.text;
      ++parsed[r.tier];
    }
  }
  EXPECT_EQ(parsed.size(), static_cast<size_t>(kTierCount));
}

TEST(RefExpressions, ParserHandForms) {
  struct Case {
    const char* text;
    const char* program;
    Tier tier;
  };
  const Case cases[] = {
      {"the star",
       R"({"part":"","plural":false,"target":{"category":"star","colour":"","size":""}})",
       Tier::kE0},
      {"The big grey disc.",
       R"({"part":"","plural":false,"target":{"category":"circle","colour":"gray","size":"large"}})",
       Tier::kE1},
      {"the leftmost mug",
       R"({"part":"","plural":false,"target":{"axis":"left","category":"cup","colour":"","ordinal":1,"size":""}})",
       Tier::kE2},
      {"the third red square from the bottom",
       R"({"part":"","plural":false,"target":{"axis":"bottom","category":"square","colour":"red","ordinal":3,"size":""}})",
       Tier::kE2},
      {"the roof of the house to the left of the blue circle",
       R"({"part":"roof","plural":false,"reference":{"category":"circle","colour":"blue","size":""},"relation":"left_of","target":{"category":"house","colour":"","size":""}})",
       Tier::kE3},
      {"where rain can't reach you",
       R"({"part":"roof","plural":false,"target":{"category":"house","colour":"","size":""}})",
       Tier::kI1},
      {"the part you hold of what you drink coffee from",
       R"({"part":"handle","plural":false,"target":{"category":"cup","colour":"","size":""}})",
       Tier::kI2},
      {"the red shapes",
       R"({"part":"","plural":true,"target":{"category":"shape","colour":"red","size":""}})",
       Tier::kE1},
  };
  for (const Case& c : cases) {
    const ParseResult r = ParseQuery(c.text);
    ASSERT_TRUE(r.ok) << c.text << ": " << r.error;
    EXPECT_EQ(ProgramToJson(r.program).dump(), c.program) << c.text;
    EXPECT_EQ(TierName(r.tier), std::string(TierName(c.tier))) << c.text;
  }
  EXPECT_FALSE(ParseQuery("please do something nice").ok);
  // Without facts the implicit phrase names nothing (the segmenter's view).
  EXPECT_FALSE(ParseQuery("what you drink coffee from", {.facts = false}).ok);
  EXPECT_TRUE(ParseQuery("the star left of the house").relation_words);
}

TEST(RefExpressions, ExplicitProgramForEveryTarget) {
  for (const Scene& s : TestScenes()) {
    for (const Expression& e : s.expressions) {
      std::optional<Program> p = ExplicitProgramFor(s, e.target);
      if (!p) continue;
      auto t = EvaluateInScene(s, *p);
      ASSERT_TRUE(t.ok()) << RenderProgram(*p) << ": " << t.status().ToString();
      EXPECT_EQ(*t, e.target) << RenderProgram(*p);
      // The canonical text parses back to the same program.
      const ParseResult r = ParseQuery(RenderProgram(*p));
      EXPECT_EQ(ProgramToJson(r.program).dump(), ProgramToJson(*p).dump()) << RenderProgram(*p);
    }
  }
}

}  // namespace
}  // namespace tessera::tarot
