// SimilarityMap on a hand grid (interpolation between patch centres, harmonic and mean
// combination) and against a per-pixel reference that interpolates features' cosines directly.
#include "tarot/features.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"

namespace tessera::tarot {
namespace {

// Two patches side by side, stride 4: f0 = (1, 0), f1 = (0.6, 0.8); cos(f0, f1) = 0.6.
PatchGrid TwoPatches() {
  PatchGrid g;
  g.grid_w = 2;
  g.grid_h = 1;
  g.dim = 2;
  g.stride = 4;
  g.features = {1.0f, 0.0f, 0.6f, 0.8f};
  return g;
}

TEST(TarotSimilarityMap, InterpolatesBetweenPatchCentres) {
  // One point in patch 0: patch similarities (1, 0.6). Pixel x sits at patch coordinate
  // u = (x + 0.5) / 4 - 0.5 clamped to [0, 1]: x = 0, 1 -> 0 (1.0); x = 2 -> 0.125 (0.95);
  // x = 3 -> 0.375 (0.85); x = 4 -> 0.625 (0.75); x = 5 -> 0.875 (0.65); x = 6, 7 -> 1 (0.6).
  const std::vector<float> m = SimilarityMap(TwoPatches(), {{1, 1, true}}, Combine::kMean, 8, 2);
  const double want[8] = {1.0, 1.0, 0.95, 0.85, 0.75, 0.65, 0.6, 0.6};
  ASSERT_EQ(m.size(), 16u);
  for (int y = 0; y < 2; ++y) {
    for (int x = 0; x < 8; ++x) EXPECT_NEAR(m[y * 8 + x], want[x], 1e-6) << x << "," << y;
  }
}

TEST(TarotSimilarityMap, HarmonicAndMeanCombine) {
  // Points in patch 0 and patch 1: at x = 0 the per-point values are 1 and 0.6.
  // Mean: 0.8. Harmonic: 2 / (1/1 + 1/0.6) = 2 / (8/3) = 0.75.
  const std::vector<Point> pts = {{1, 1, true}, {6, 1, true}};
  EXPECT_NEAR(SimilarityMap(TwoPatches(), pts, Combine::kMean, 8, 1)[0], 0.8, 1e-6);
  EXPECT_NEAR(SimilarityMap(TwoPatches(), pts, Combine::kHarmonic, 8, 1)[0], 0.75, 1e-6);
  // A point outside the grid uses the nearest patch (clamped).
  EXPECT_NEAR(SimilarityMap(TwoPatches(), {{100, -5, true}}, Combine::kMean, 8, 1)[0], 0.6, 1e-6);
  // Harmonic clamps negative cosines to 1e-6.
  PatchGrid g = TwoPatches();
  g.features = {1.0f, 0.0f, -1.0f, 0.0f};
  EXPECT_NEAR(SimilarityMap(g, {{1, 1, true}}, Combine::kHarmonic, 8, 1)[7], 1e-6, 1e-9);
  EXPECT_NEAR(SimilarityMap(g, {{1, 1, true}}, Combine::kMean, 8, 1)[7], -1.0, 1e-6);
  // No points: zeros.
  EXPECT_EQ(SimilarityMap(g, {}, Combine::kMean, 3, 2), std::vector<float>(6, 0.0f));
}

TEST(TarotSimilarityMap, MatchesPlainReference) {
  core::Rng rng(7);
  PatchGrid g;
  g.grid_w = 5;
  g.grid_h = 3;
  g.dim = 4;
  g.stride = 6;
  for (int c = 0; c < 15; ++c) {
    double v[4], norm = 0;
    for (double& x : v) {
      x = rng.Uniform(0.05, 1.0);
      norm += x * x;
    }
    for (double x : v) g.features.push_back(static_cast<float>(x / std::sqrt(norm)));
  }
  const std::vector<Point> pts = {{3, 3, true}, {20.5, 9.2, true}, {29, 17, true}};
  const int w = 31, h = 19;  // not a multiple of the stride
  for (Combine combine : {Combine::kHarmonic, Combine::kMean}) {
    const std::vector<float> m = SimilarityMap(g, pts, combine, w, h);
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        double acc = 0;
        for (const Point& p : pts) {
          const int px = std::min(static_cast<int>(p.x) / 6, 4);
          const int py = std::min(static_cast<int>(p.y) / 6, 2);
          auto cos_at = [&](int gx, int gy) {
            double d = 0;
            for (int k = 0; k < 4; ++k) d += g.at(px, py)[k] * g.at(gx, gy)[k];
            return d;
          };
          const double u = std::clamp((x + 0.5) / 6 - 0.5, 0.0, 4.0);
          const double v = std::clamp((y + 0.5) / 6 - 0.5, 0.0, 2.0);
          const int u0 = static_cast<int>(u), v0 = static_cast<int>(v);
          const int u1 = std::min(u0 + 1, 4), v1 = std::min(v0 + 1, 2);
          const double fu = u - u0, fv = v - v0;
          const double s = (1 - fv) * ((1 - fu) * cos_at(u0, v0) + fu * cos_at(u1, v0)) +
                           fv * ((1 - fu) * cos_at(u0, v1) + fu * cos_at(u1, v1));
          acc += combine == Combine::kHarmonic ? 1 / std::clamp(s, 1e-6, 1.0) : s;
        }
        const double want = combine == Combine::kHarmonic ? 3 / acc : acc / 3;
        ASSERT_NEAR(m[y * w + x], want, 1e-5) << x << "," << y;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::tarot
