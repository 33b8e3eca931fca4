#include "models/vae_tiling.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::models {
namespace {

TEST(VaeTilingTest, TheHaloIsTwoLatentPixelsForEveryBlockCount) {
  for (int64_t blocks = 1; blocks <= 8; ++blocks) {
    EXPECT_EQ(TileHaloLatentPixels(blocks), 2) << blocks << " blocks";
  }
}

TEST(VaeTilingTest, SpansCoverTheAxisWithClippedHalos) {
  const std::vector<TileSpan> s = TileSpans(10, 3, 2);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].core_begin, 0);
  EXPECT_EQ(s[0].core_end, 3);
  EXPECT_EQ(s[0].begin, 0);  // clipped at the border
  EXPECT_EQ(s[0].end, 5);
  EXPECT_EQ(s[1].core_begin, 3);
  EXPECT_EQ(s[1].core_end, 6);
  EXPECT_EQ(s[1].begin, 1);
  EXPECT_EQ(s[1].end, 8);
  EXPECT_EQ(s[2].core_begin, 6);
  EXPECT_EQ(s[2].core_end, 10);
  EXPECT_EQ(s[2].begin, 4);
  EXPECT_EQ(s[2].end, 10);
  // Cores partition the axis, in order, for any count; more tiles than pixels are clamped.
  for (int64_t extent = 1; extent <= 20; ++extent) {
    for (int64_t tiles = 1; tiles <= 24; ++tiles) {
      const std::vector<TileSpan> spans = TileSpans(extent, tiles, 2);
      ASSERT_EQ(static_cast<int64_t>(spans.size()), std::min(extent, tiles));
      int64_t next = 0;
      for (const TileSpan& t : spans) {
        EXPECT_EQ(t.core_begin, next);
        EXPECT_GE(t.core_size(), 1);
        EXPECT_LE(t.begin, t.core_begin);
        EXPECT_GE(t.end, t.core_end);
        EXPECT_GE(t.begin, 0);
        EXPECT_LE(t.end, extent);
        next = t.core_end;
      }
      EXPECT_EQ(next, extent);
    }
  }
}

TEST(VaeTilingTest, ComputeFactorFollowsTheClosedForm) {
  EXPECT_DOUBLE_EQ(TiledComputeFactor(64, 64, 1, 2), 1.0);
  EXPECT_DOUBLE_EQ(TiledComputeFactor(64, 64, 2, 2), 1.0625 * 1.0625);  // +12.9%
  EXPECT_DOUBLE_EQ(TiledComputeFactor(64, 64, 4, 2), 1.1875 * 1.1875);  // +41.0%
  EXPECT_DOUBLE_EQ(TiledComputeFactor(32, 32, 4, 2), 1.375 * 1.375);    // +89.1%
  EXPECT_DOUBLE_EQ(TiledComputeFactor(32, 48, 2, 2), (36.0 / 32) * (52.0 / 48));
  // Edge tiles narrower than the halo clip more: below the closed form.
  EXPECT_LT(TiledComputeFactor(6, 6, 6, 2), (1 + 4.0 * 5 / 6) * (1 + 4.0 * 5 / 6));
}

}  // namespace
}  // namespace tessera::models
