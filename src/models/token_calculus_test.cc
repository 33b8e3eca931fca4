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
}

TEST(TokensTest, ResolutionIsDigitsOnly) {
  // Once read as 1280x720 (sscanf skipped signs and spaces) or undefined (overflow).
  for (const char* bad : {"+1280x+720",
                          "+1280x720",
                          "1280x+720",
                          " 1280x720",
                          "1280x 720",
                          "1280 x720",
                          "1280x720 ",
                          "1280x720junk",
                          "1280x720x5",
                          "-1280x720",
                          "0x720",
                          "1280x0",
                          "0p",
                          "+720p",
                          " 720p",
                          "720p ",
                          "7 20p",
                          "99999999999x720",
                          "1280x99999999999",
                          "4294968576x720",
                          "x720",
                          "1280x",
                          "1280X720",
                          "720P",
                          "0x500x500",
                          ""}) {
    auto r = ParseResolution(bad);
    ASSERT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_NE(r.status().message().find("res: got '"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(ParseResolution("1280x720")->width, 1280);
  EXPECT_EQ(ParseResolution("1280x720")->height, 720);
  EXPECT_EQ(ParseResolution("16x16384")->height, 16384);
  EXPECT_FALSE(ParseResolution("16x16385").ok());
  EXPECT_EQ(ParseResolution("8640p")->height, 8640);
  EXPECT_FALSE(ParseResolution("8641p").ok());
  auto r = *ParseResolution("720p");
  EXPECT_FALSE(CountTokens(MediaKind::kVideo, r, 0).ok());
  EXPECT_FALSE(CountTokens(MediaKind::kVideo, r, -3).ok());
  EXPECT_FALSE(CountTokens(MediaKind::kVideo, r, 5, 0).ok());
}

}  // namespace
}  // namespace tessera::models
