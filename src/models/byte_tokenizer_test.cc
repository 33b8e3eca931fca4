#include "models/byte_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/rng.h"
#include "models/llama_config.h"
#include "models/llama_test_util.h"

namespace tessera::models {
namespace {

TEST(ByteTokenizer, ConstantsMatchTheTinyPresets) {
  EXPECT_EQ(ByteTokenizer::kVocab, 259);
  EXPECT_EQ(ByteTokenizer::kBos, 256);
  EXPECT_EQ(ByteTokenizer::kEos, 257);
  EXPECT_EQ(ByteTokenizer::kPad, 258);
  for (const char* name : {"tiny-mha", "tiny-gqa"}) {
    auto c = LlamaPreset(name);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->vocab, ByteTokenizer::kVocab);
    EXPECT_EQ(c->bos_id, ByteTokenizer::kBos);
    EXPECT_EQ(c->eos_id, ByteTokenizer::kEos);
  }
}

TEST(ByteTokenizer, EncodeIsBosThenTheBytes) {
  const std::vector<int32_t> ids = ByteTokenizer::Encode("Hi\n\xc3\xa9");
  EXPECT_EQ(ids, (std::vector<int32_t>{256, 'H', 'i', '\n', 0xc3, 0xa9}));
  EXPECT_EQ(ByteTokenizer::Encode(""), std::vector<int32_t>{256});
}

TEST(ByteTokenizer, RoundTripOfEveryByteAndRandomBytes) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(ByteTokenizer::Decode(ByteTokenizer::Encode(all)), all);
  core::Rng rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::string s(rng.Below(200), '\0');
    for (char& c : s) c = static_cast<char>(rng.Below(256));  // invalid UTF-8 included
    const auto ids = ByteTokenizer::Encode(s);
    ASSERT_EQ(ids.size(), s.size() + 1);
    for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < 257);
    EXPECT_EQ(ByteTokenizer::Decode(ids), s);
  }
}

TEST(ByteTokenizer, DecodeDropsSpecialTokens) {
  const std::vector<int32_t> ids = {256, 'a', 258, 'b', 257, 0, 255, 256};
  EXPECT_EQ(ByteTokenizer::Decode(ids), std::string("ab\0\xff", 4));
  EXPECT_EQ(ByteTokenizer::Decode(std::vector<int32_t>{256, 257, 258}), "");
}

TEST(ByteTokenizerDeathTest, DecodeOfAnIdOutsideTheVocabularyIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the BLAS may have started threads
  EXPECT_DEATH(ByteTokenizer::Decode(std::vector<int32_t>{'a', 259}), "id 259");
  EXPECT_DEATH(ByteTokenizer::Decode(std::vector<int32_t>{-1}), "id -1");
}

TEST(ParseTokenIds, ReadsCommaAndSpaceSeparatedIds) {
  auto ids = ParseTokenIds(" 1, 2 3,\t258\n", 259);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 2, 3, 258}));
}

TEST(ParseTokenIds, OutOfRangeAndMalformedIdsAreRefused) {
  using testing::ExpectError;
  ExpectError(ParseTokenIds("1 2 300", 259).status(), core::StatusCode::kInvalidArgument,
              {"#3", "got '300'", "[0, 259)"});
  ExpectError(ParseTokenIds("-1", 259).status(), core::StatusCode::kInvalidArgument,
              {"#1", "got '-1'", "[0, 259)"});
  ExpectError(ParseTokenIds("5 abc", 259).status(), core::StatusCode::kInvalidArgument,
              {"#2", "'abc'"});
  ExpectError(ParseTokenIds("259", 259).status(), core::StatusCode::kInvalidArgument,
              {"got '259'"});
  ExpectError(ParseTokenIds(" , ", 259).status(), core::StatusCode::kInvalidArgument,
              {"no ids", "at least one"});
}

}  // namespace
}  // namespace tessera::models
