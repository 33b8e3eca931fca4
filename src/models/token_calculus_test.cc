#include "models/token_calculus.h"

#include <gtest/gtest.h>

namespace tessera::models {
namespace {

TEST(TokensTest, FifteenSecond1080pVideoIs497760) {
  auto r = ParseResolution("1080p");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->height, 1080);
  EXPECT_EQ(r->width, 1920);
  // 241 frames -> 61 latent frames; 1088/16 x 1920/16 = 68 x 120 = 8160 tokens per frame.
  EXPECT_EQ(LatentFrames(MediaKind::kVideo, 15, 16), 61);
  EXPECT_EQ(TokensPerLatentFrame(*r), 8160);
  EXPECT_EQ(*CountTokens(MediaKind::kVideo, *r, 15), 497760);
}

TEST(TokensTest, ImagesWorkedByHand) {
  // 720p image: 1280x720, both multiples of 16: 80 x 45 = 3600 tokens, 1 latent frame.
  EXPECT_EQ(*CountTokens(MediaKind::kImage, *ParseResolution("720p"), 0), 3600);
  // 480p image: width round(480*16/9) = 854 -> padded 864 -> 54; 480 -> 30: 1620 tokens.
  EXPECT_EQ(*CountTokens(MediaKind::kImage, *ParseResolution("480p"), 0), 1620);
  // 256p: width 456 -> padded 464 -> 29; 256 -> 16: 464 tokens.
  EXPECT_EQ(*CountTokens(MediaKind::kImage, *ParseResolution("256p"), 0), 464);
  // Explicit WIDTHxHEIGHT: 1024x1024 -> 64 x 64.
  EXPECT_EQ(*CountTokens(MediaKind::kImage, *ParseResolution("1024x1024"), 0), 4096);
}

TEST(TokensTest, OtherLengths) {
  // 5 s at 16 fps: 81 frames -> 21 latent frames; 10 s: 161 -> 41.
  EXPECT_EQ(*CountTokens(MediaKind::kVideo, *ParseResolution("480p"), 5), 21 * 1620);
  EXPECT_EQ(*CountTokens(MediaKind::kVideo, *ParseResolution("720p"), 10), 41 * 3600);
}

TEST(TokensTest, BadInput) {
  EXPECT_FALSE(ParseResolution("1080").ok());
  EXPECT_FALSE(ParseResolution("p").ok());
  EXPECT_FALSE(ParseResolution("-720p").ok());
  EXPECT_FALSE(ParseResolution("0x0").ok());
  EXPECT_FALSE(ParseResolution("99999p").ok());
  auto r = *ParseResolution("720p");
  EXPECT_FALSE(CountTokens(MediaKind::kVideo, r, 0).ok());
  EXPECT_FALSE(CountTokens(MediaKind::kVideo, r, -3).ok());
  EXPECT_FALSE(CountTokens(MediaKind::kVideo, r, 5, 0).ok());
}

}  // namespace
}  // namespace tessera::models
