#include "serve/png.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/rng.h"
#include "serve/base64.h"

namespace tessera::serve {
namespace {

TEST(PngTest, RoundTripThroughLibpngAndBase64) {
  const int64_t w = 13, h = 7;
  std::vector<float> planar(3 * w * h);
  core::Rng rng(3);
  for (float& v : planar) v = static_cast<float>(rng.Uniform(-1.5, 1.5));  // some clamped
  planar[0] = std::numeric_limits<float>::quiet_NaN();
  auto rgb = FrameToRgb8(planar, w, h);
  ASSERT_TRUE(rgb.ok());
  EXPECT_EQ(rgb->rgb[0], 0);  // NaN -> -1 -> 0
  // Channel 1 of pixel (y 2, x 5) is planar element 1 * w * h + 2 * w + 5.
  const float v = std::clamp(planar[static_cast<size_t>(w * h + 2 * w + 5)], -1.0f, 1.0f);
  EXPECT_EQ(rgb->rgb[static_cast<size_t>(3 * (2 * w + 5) + 1)],
            static_cast<uint8_t>(std::lround((v + 1.0) * 127.5)));
  auto png = EncodePng(*rgb);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  EXPECT_EQ(png->substr(1, 3), "PNG");
  auto b64 = DecodeBase64(EncodeBase64(*png));
  ASSERT_TRUE(b64.ok());
  ASSERT_EQ(*b64, *png);
  auto back = DecodePng(*b64);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->width, w);
  EXPECT_EQ(back->height, h);
  EXPECT_EQ(back->rgb, rgb->rgb);
}

TEST(PngTest, BadInputIsRefused) {
  std::vector<float> planar(3 * 4 * 4);
  EXPECT_FALSE(FrameToRgb8(planar, 4, 5).ok());
  EXPECT_FALSE(FrameToRgb8(planar, 0, 4).ok());
  EXPECT_FALSE(DecodePng("not a png").ok());
  EXPECT_FALSE(FramePng(planar, 1, 4, 4).ok());
  EXPECT_FALSE(DecodeBase64("abc").ok());
  EXPECT_FALSE(DecodeBase64("ab=c").ok());
  EXPECT_FALSE(DecodeBase64("a*cd").ok());
}

TEST(PngTest, Base64KnownVectors) {
  EXPECT_EQ(EncodeBase64(""), "");
  EXPECT_EQ(EncodeBase64("f"), "Zg==");
  EXPECT_EQ(EncodeBase64("fo"), "Zm8=");
  EXPECT_EQ(EncodeBase64("foobar"), "Zm9vYmFy");
  for (const char* s : {"f", "fo", "foo", "foob", "fooba"}) {
    auto d = DecodeBase64(EncodeBase64(s));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, s);
  }
}

}  // namespace
}  // namespace tessera::serve
