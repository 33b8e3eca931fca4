#include "workload/batch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "workload/batch_source.h"

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

// A field that does not apply, or that the format lacks, is refused naming it: it used to be
// accepted and ignored (an image with "seconds" planned as the image alone).
TEST(WorkloadTest, FieldsThatDoNotApplyAreRefused) {
  auto bad = [](core::Json j) { return BatchFromJson(j, "b.json").status().message(); };
  EXPECT_EQ(bad({{"sequences", {{{"kind", "image"}, {"res", "720p"}, {"seconds", 5}}}}}),
            "b.json: sequences[0].seconds: does not apply to an image (only a video has a length "
            "and a frame rate); remove it");
  EXPECT_NE(bad({{"sequences", {{{"kind", "image"}, {"res", "720p"}, {"fps", 24}}}}})
                .find("sequences[0].fps: does not apply to an image"),
            std::string::npos);
  EXPECT_NE(bad({{"sequences", {{{"tokens", 5}}, {{"tokens", 9}, {"seconds", 5}}}}})
                .find("sequences[1].seconds: does not apply to an image"),
            std::string::npos);
  EXPECT_NE(bad({{"sequences", {{{"kind", "video"}, {"tokens", 9}, {"seconds", 5}}}}})
                .find("sequences[0].seconds: does not apply without res"),
            std::string::npos);
  EXPECT_EQ(bad({{"sequences", {{{"tokens", 5}, {"tokns", 7}}}}}),
            "b.json: sequences[0]: unknown key 'tokns', must be one of id, tokens, kind, res, "
            "seconds, fps");
  EXPECT_EQ(bad({{"sequences", {{{"tokens", 5}}}}, {"nmae", "x"}}),
            "b.json: unknown key 'nmae', must be one of name, sequences");
  EXPECT_EQ(bad({{"sequences", {{{"tokens", 5}}}}, {"name", 7}}),
            "b.json: name: got 7, must be a string");
  EXPECT_EQ(bad({{"sequences", {5}}}), "b.json: sequences[0]: got 5, must be an object");
  // What applies is still read: a video's seconds and fps with its res, an id anywhere.
  auto ok =
      BatchFromJson({{"sequences",
                      {{{"id", 3}, {"kind", "video"}, {"res", "720p"}, {"seconds", 5}, {"fps", 8}},
                       {{"id", 0}, {"kind", "video"}, {"tokens", 500}}}}},
                    "b.json");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->sequences[0].fps, 8);
}

// Writes `b` with WriteJsonFile, reads it back with BatchFromJson.
core::StatusOr<Batch> SaveAndReload(const Batch& b) {
  const std::string path =
      ::testing::TempDir() + "/batch_test_" + std::to_string(getpid()) + ".json";
  RETURN_IF_ERROR(core::WriteJsonFile(path, ToJson(b)));
  auto j = core::ReadJsonFile(path);
  std::remove(path.c_str());
  if (!j.ok()) return j.status();
  return BatchFromJson(*j, path);
}

void ExpectSameBatch(const Batch& got, const Batch& want) {
  EXPECT_EQ(ToJson(got), ToJson(want));
  EXPECT_EQ(got.name, want.name);
  ASSERT_EQ(got.sequences.size(), want.sequences.size());
  for (size_t i = 0; i < want.sequences.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got.sequences[i].id, want.sequences[i].id);
    EXPECT_EQ(got.sequences[i].kind, want.sequences[i].kind);
    EXPECT_EQ(got.sequences[i].tokens, want.sequences[i].tokens);
    EXPECT_EQ(got.sequences[i].Bucket(), want.sequences[i].Bucket());
  }
  EXPECT_EQ(got.video_token_share(), want.video_token_share());
}

// Everything tessera saves reloads. A video given by token count used to be saved without
// its kind (reloaded as an image), and a video counted at another frame rate without its fps
// (the reload then refused its own token count).
TEST(WorkloadTest, SavedBatchesReload) {
  auto generated = GenerateBatch({45, 125000, 10, 8, 5});
  ASSERT_TRUE(generated.ok());
  auto back = SaveAndReload(*generated);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameBatch(*back, *generated);

  core::Json hand = {{"name", "hand"},
                     {"sequences",
                      {{{"kind", "video"}, {"res", "720p"}, {"seconds", 4}, {"fps", 24}},
                       {{"kind", "video"}, {"tokens", 5000}},
                       {{"kind", "image"}, {"res", "1280x720"}},
                       {{"tokens", 77}}}}};
  auto h = BatchFromJson(hand, "hand.json");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->sequences[0].fps, 24);
  EXPECT_EQ(h->sequences[1].kind, models::MediaKind::kVideo);
  // An image is one frame: it has the default rate ("fps" on an image is refused, see
  // FieldsThatDoNotApplyAreRefused).
  EXPECT_EQ(h->sequences[2].fps, kDefaultFps);
  back = SaveAndReload(*h);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameBatch(*back, *h);
  EXPECT_EQ(back->sequences[0].fps, 24);
  EXPECT_EQ(back->sequences[0].tokens, h->sequences[0].tokens);

  // A scaled batch (tokens no longer given by res) keeps kind and tokens.
  Batch scaled = *generated;
  ScaleTokens(1.0 / 64, &scaled);
  back = SaveAndReload(scaled);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(scaled));
  EXPECT_EQ(back->total_tokens(), scaled.total_tokens());
  EXPECT_EQ(back->video_token_share(), scaled.video_token_share());
}

// Token counts are bounded at load time: a billion-token sequence once reached `run` and
// ended in std::bad_alloc.
TEST(WorkloadTest, TokenCountsAreBounded) {
  auto bad = [](const core::Json& j) { return BatchFromJson(j, "b.json").status().message(); };
  EXPECT_EQ(bad({{"sequences", {{{"tokens", 1000000000}}}}}),
            "b.json: sequences[0].tokens: got 1000000000, must be <= 134217728 (2^27, the "
            "longest sequence)");
  EXPECT_EQ(bad({{"sequences", {{{"kind", "video"}, {"res", "4320p"}, {"seconds", 3600}}}}}),
            "b.json: sequences[0]: kind/res/seconds/fps give 1866369600 tokens, must be <= "
            "134217728 (2^27, the longest sequence)");
  EXPECT_EQ(
      bad({{"sequences", {{{"kind", "video"}, {"res", "720p"}, {"seconds", 4}, {"fps", 100000}}}}}),
      "b.json: sequences[0].fps: got 100000, must be in [1, 1000]");
  core::Json many = {{"sequences", core::Json::array()}};
  for (int i = 0; i < 513; ++i) many["sequences"].push_back({{"tokens", kMaxSequenceTokens}});
  EXPECT_EQ(bad(many),
            "b.json: sequences: got 68853694464 tokens by sequences[512], must be <= "
            "68719476736 in all (2^36, the largest batch)");
  core::Json crowd = {{"sequences", core::Json::array()}};
  crowd["sequences"].get_ref<core::Json::array_t&>().resize(kMaxBatchSequences + 1);
  EXPECT_EQ(bad(crowd), "b.json: sequences: got 4194305 sequences, must be <= 4194304 (2^22)");
  // Whatever the generator makes, a file may hold (its own bounds are the tighter).
  EXPECT_LE(kMaxGeneratedTokens, kMaxBatchTokens);
}

}  // namespace
}  // namespace tessera::workload

namespace tessera::workload {
namespace {

TEST(WorkloadTest, TokenCountsMakeTheBatchAJsonListOfTokensMakes) {
  const std::vector<int64_t> lens = {5, 1, 12345};
  auto b = BatchFromTokenCounts(lens, "seq_lens", "py");
  ASSERT_TRUE(b.ok()) << b.status().message();
  auto j = BatchFromJson(
      core::Json::parse(
          R"({"name":"py","sequences":[{"tokens":5},{"tokens":1},{"tokens":12345}]})"),
      "f");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(ToJson(*b).dump(), ToJson(*j).dump());
  EXPECT_EQ(b->total_tokens(), 12351);
}

TEST(WorkloadTest, BadTokenCountsNameTheFieldAndIndex) {
  auto expect = [](std::vector<int64_t> lens, const std::string& want) {
    auto b = BatchFromTokenCounts(lens, "seq_lens");
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.status().message().find(want), std::string::npos) << b.status().message();
  };
  expect({}, "seq_lens: empty batch");
  expect({3, -5}, "seq_lens[1]: got -5 tokens, must be in [1, 134217728]");
  expect({0}, "seq_lens[0]: got 0 tokens");
  expect({kMaxSequenceTokens + 1}, "seq_lens[0]: got 134217729");
  std::vector<int64_t> huge(kMaxBatchTokens / kMaxSequenceTokens + 1, kMaxSequenceTokens);
  expect(huge, "in all (2^36");
}

}  // namespace
}  // namespace tessera::workload
