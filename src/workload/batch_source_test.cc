#include "workload/batch_source.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace tessera::workload {
namespace {

TEST(BatchSourceTest, MixtureMatchesGenerateBatch) {
  BatchSource src;
  src.workload = "v35";
  src.load = "low";
  src.video_seconds = 5;
  src.seed = 7;
  auto got = LoadBatch(src, 8);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  auto want = GenerateBatch({35, 125000, 5, 8, 7});
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(got->sequences.size(), want->sequences.size());
  for (size_t i = 0; i < got->sequences.size(); ++i) {
    EXPECT_EQ(got->sequences[i].tokens, want->sequences[i].tokens);
    EXPECT_EQ(got->sequences[i].Bucket(), want->sequences[i].Bucket());
  }
  EXPECT_EQ(got->name, want->name);
}

TEST(BatchSourceTest, ScalesTokensRoundedAtLeastOne) {
  Batch b;
  b.sequences = {{0, models::MediaKind::kImage, "", 0, 1000},
                 {1, models::MediaKind::kImage, "", 0, 3},
                 {2, models::MediaKind::kVideo, "", 5, 149}};
  ScaleTokens(0.01, &b);
  EXPECT_EQ(b.sequences[0].tokens, 10);
  EXPECT_EQ(b.sequences[1].tokens, 1);  // 0.03 rounds to 0, kept at 1
  EXPECT_EQ(b.sequences[2].tokens, 1);  // 1.49 rounds to 1
  BatchSource src;
  src.workload = "v50";
  src.token_scale = 1.0 / 64;
  auto scaled = LoadBatch(src, 4);
  src.token_scale = 1;
  auto full = LoadBatch(src, 4);
  ASSERT_TRUE(scaled.ok() && full.ok());
  for (size_t i = 0; i < full->sequences.size(); ++i) {
    EXPECT_EQ(scaled->sequences[i].tokens,
              std::max<int64_t>(1, std::llround(full->sequences[i].tokens / 64.0)));
  }
}

TEST(BatchSourceTest, ReadsAFile) {
  const std::string path = ::testing::TempDir() + "/batch_source_test.json";
  std::ofstream(path) << R"({"name": "two", "sequences": [{"tokens": 100}, {"tokens": 7}]})";
  BatchSource src;
  src.workload = path;
  src.token_scale = 0.5;
  auto b = LoadBatch(src, 2);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->sequences.size(), 2u);
  EXPECT_EQ(b->sequences[0].tokens, 50);
  EXPECT_EQ(b->sequences[1].tokens, 4);  // 3.5 rounds away from zero
  std::remove(path.c_str());
}

TEST(BatchSourceTest, Errors) {
  BatchSource src;
  src.token_scale = 0;
  EXPECT_NE(LoadBatch(src, 2).status().message().find("token_scale: got 0"), std::string::npos);
  src.token_scale = 1.5;
  EXPECT_FALSE(LoadBatch(src, 2).ok());
  src.token_scale = 1;
  src.workload = "no-such-mixture-or-file";
  auto st = LoadBatch(src, 2).status();
  EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument) << st.ToString();
  src.workload = "v50";
  src.load = "medium";
  EXPECT_FALSE(LoadBatch(src, 2).ok());
}

}  // namespace
}  // namespace tessera::workload
