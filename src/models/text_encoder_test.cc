#include "models/text_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tessera::models {
namespace {

TEST(TextEncoderTest, TokenizeHashesLowercaseWordsAndPads) {
  TextEncoderConfig c;
  std::vector<int32_t> a(c.tokens), b(c.tokens);
  EXPECT_EQ(Tokenize("A red, CUBE!", c, a), 3);
  EXPECT_EQ(Tokenize("a Red cube", c, b), 3);
  EXPECT_EQ(a, b);
  for (int64_t t = 0; t < 3; ++t) EXPECT_GT(a[t], 0);
  for (int64_t t = 3; t < c.tokens; ++t) EXPECT_EQ(a[t], 0);
  EXPECT_NE(a[0], a[1]);
  EXPECT_EQ(Tokenize("", c, a), 0);
  std::string long_prompt;
  for (int i = 0; i < 100; ++i) {
    long_prompt += 'w';
    long_prompt += std::to_string(i);
    long_prompt += ' ';
  }
  EXPECT_EQ(Tokenize(long_prompt, c, a), c.tokens);
}

TEST(TextEncoderTest, BadConfigNamesTheField) {
  TextEncoderConfig c;
  c.num_heads = 3;
  const core::Status st = ValidateTextEncoderConfig(c);
  EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("TextEncoderConfig.num_heads"), std::string::npos) << st.message();
}

TEST(TextEncoderTest, EncodesDeterministicallyWithOpsAndFreesTemporaries) {
  TextEncoderConfig c;
  c.num_layers = 2;
  runtime::HeapDeviceAllocator allocator;
  auto enc = TextEncoder::Create(c, 5, allocator);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  EXPECT_EQ(allocator.live_bytes(), enc->WeightBytes());
  runtime::DeviceTensor tok1, pool1, tok2, pool2, tok3, pool3;
  const runtime::OpContext ctx{"text", runtime::Section::kPrologue, -1};
  ASSERT_TRUE(enc->Encode(allocator, "a red cube", "text.cond", ctx, &tok1, &pool1).ok());
  EXPECT_EQ(allocator.ops(), 4);  // embed, 2 layers, final
  EXPECT_EQ(allocator.live_bytes(), enc->WeightBytes() +
                                        runtime::AlignBytes(c.tokens * c.hidden * 4) +
                                        runtime::AlignBytes(c.hidden * 4));
  ASSERT_TRUE(enc->Encode(allocator, "A RED CUBE", "text.cond", ctx, &tok2, &pool2).ok());
  ASSERT_TRUE(enc->Encode(allocator, "", "text.uncond", ctx, &tok3, &pool3).ok());
  for (int64_t i = 0; i < tok1.f32_count(); ++i) {
    ASSERT_EQ(tok1.f32()[i], tok2.f32()[i]);
    ASSERT_TRUE(std::isfinite(tok1.f32()[i]));
  }
  bool differs = false;
  for (int64_t i = 0; i < c.hidden; ++i) {
    EXPECT_EQ(pool1.f32()[i], pool2.f32()[i]);
    EXPECT_EQ(pool3.f32()[i], 0.0f);  // no real tokens
    differs = differs || tok1.f32()[i] != tok3.f32()[i];
  }
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace tessera::models
