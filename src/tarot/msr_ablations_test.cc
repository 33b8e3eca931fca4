#include "tarot/msr_ablations.h"

#include <gtest/gtest.h>

#include "tarot/pipeline.h"
#include "tarot/tarot_test_util.h"

namespace tessera::tarot {
namespace {

TEST(TarotMsrAblations, AFlatGridMakesEverySimilarityOne) {
  const PatchGrid grid = fakes::PixelGrid(6, 4, [](int x, int y) { return 0.3 * x + 0.7 * y; });
  const PatchGrid flat = FlatGrid(grid);
  EXPECT_EQ(flat.grid_w, 6);
  EXPECT_EQ(flat.grid_h, 4);
  EXPECT_EQ(flat.dim, 2);
  ASSERT_EQ(flat.features.size(), grid.features.size());
  for (size_t i = 0; i < flat.features.size(); i += 2) {
    EXPECT_EQ(flat.features[i], 1.0f);
    EXPECT_EQ(flat.features[i + 1], 0.0f);
  }
  // The real grid's map varies; the flat one's is 1 everywhere.
  const std::vector<float> real = SimilarityMap(grid, {{0.5, 0.5, true}}, Combine::kHarmonic, 6, 4);
  const std::vector<float> s = SimilarityMap(flat, {{0.5, 0.5, true}}, Combine::kHarmonic, 6, 4);
  ASSERT_EQ(s.size(), 24u);
  for (float v : s) EXPECT_FLOAT_EQ(v, 1.0f);
  EXPECT_LT(*std::min_element(real.begin(), real.end()), 0.9f);
}

TEST(TarotMsrAblations, TheYesJudgeAnswersYesAndForwardsTheRest) {
  fakes::ScriptReasoner inner;
  inner.judge = [](const Mask&, const Mask&) { return false; };
  inner.compare_answer = 1;
  YesJudgeReasoner yes(inner);
  const Mask m(8, 8), region(8, 8);
  EXPECT_TRUE(*yes.JudgeRegion("q", m, region));
  EXPECT_TRUE(inner.judged.empty());  // the inner judge was not asked
  EXPECT_FALSE(*inner.JudgeRegion("q", m, region));
  EXPECT_EQ(*yes.Compare("q", m, region), 1);
  EXPECT_EQ(yes.name(), inner.name() + "+yes-judge");
}

TEST(TarotMsrAblations, TheAblationsAreSystemsThatRunMsr) {
  for (const char* name : {"msr-flat-features", "msr-yes-judge"}) {
    auto s = ParseSystem(name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_STREQ(SystemName(*s), name);
    EXPECT_TRUE(UsesMsr(*s));
    EXPECT_TRUE(UsesEri(*s));
  }
  EXPECT_EQ(AllSystems().size(), 10u);
}

}  // namespace
}  // namespace tessera::tarot
