#include "workload/batch.h"

#include <gtest/gtest.h>

namespace tessera::workload {
namespace {

TEST(WorkloadTest, MixtureAndLoadParse) {
  EXPECT_EQ(*ParseMixture("v35"), 35);
  EXPECT_EQ(*ParseMixture("v60"), 60);
  EXPECT_FALSE(ParseMixture("v101").ok());
  EXPECT_FALSE(ParseMixture("x50").ok());
  EXPECT_FALSE(ParseMixture("v5a").ok());
  EXPECT_EQ(*ParseLoad("high"), 350000);
  EXPECT_EQ(*ParseLoad("low"), 125000);
  EXPECT_EQ(*ParseLoad("175000"), 175000);
  EXPECT_FALSE(ParseLoad("-5").ok());
  EXPECT_FALSE(ParseLoad("0").ok());
}

TEST(WorkloadTest, GeneratorIsSeededAndHitsTheMix) {
  for (int mix : {35, 40, 45, 50, 55, 60}) {
    WorkloadSpec spec{mix, 350000, 15, 16, 7};
    auto a = GenerateBatch(spec);
    auto b = GenerateBatch(spec);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(ToJson(*a), ToJson(*b));
    // Within one smallest video (98,820 tokens) of the target share and the budget.
    const double budget = 350000.0 * 16;
    EXPECT_NEAR(a->video_token_share(), mix / 100.0, 0.06) << mix;
    EXPECT_NEAR(a->total_tokens(), budget, 0.05 * budget);
    for (size_t i = 0; i < a->sequences.size(); ++i) EXPECT_EQ(a->sequences[i].id, (int)i);
  }
  WorkloadSpec s2{50, 350000, 15, 16, 8};
  EXPECT_NE(ToJson(*GenerateBatch(s2)), ToJson(*GenerateBatch({50, 350000, 15, 16, 7})));
}

TEST(WorkloadTest, JsonRoundTripAndHandWritten) {
  auto b = GenerateBatch({40, 125000, 10, 8, 3});
  ASSERT_TRUE(b.ok());
  auto back = BatchFromJson(ToJson(*b), "rt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(*b));
  core::Json hand = {{"sequences",
                      {{{"kind", "video"}, {"res", "1080p"}, {"seconds", 15}},
                       {{"kind", "image"}, {"res", "720p"}},
                       {{"tokens", 1000}}}}};
  auto h = BatchFromJson(hand, "hand.json");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->sequences[0].tokens, 497760);
  EXPECT_EQ(h->sequences[1].tokens, 3600);
  EXPECT_EQ(h->sequences[2].tokens, 1000);
}

TEST(WorkloadTest, BadBatchesNameTheField) {
  auto bad = [](core::Json j) { return BatchFromJson(j, "b.json").status().message(); };
  EXPECT_EQ(bad({{"sequences", {{{"tokens", -4}}}}}),
            "b.json: sequences[0].tokens: got -4, must be >= 1");
  EXPECT_EQ(bad({{"sequences", {{{"kind", "audio"}, {"res", "720p"}}}}}),
            "b.json: sequences[0].kind: got 'audio', must be image or video");
  EXPECT_EQ(bad({{"sequences", core::Json::array()}}),
            "b.json: sequences: must be a non-empty array");
  EXPECT_EQ(bad({{"sequences", {{{"kind", "video"}, {"res", "720p"}}}}}),
            "b.json: sequences[0].seconds: missing required field");
  EXPECT_NE(bad({{"sequences", {{{"kind", "image"}, {"res", "72p0"}}}}}).find("res"),
            std::string::npos);
  EXPECT_FALSE(GenerateBatch({50, 0, 15, 16, 1}).ok());
  EXPECT_FALSE(GenerateBatch({50, 1000, -1, 16, 1}).ok());
}

}  // namespace
}  // namespace tessera::workload
