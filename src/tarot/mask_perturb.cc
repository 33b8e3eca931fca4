#include "tarot/mask_perturb.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tarot/seeded.h"

namespace tessera::tarot {
namespace {

constexpr int kNoiseCell = 8;
constexpr int kFar = 1 << 28;

double CornerNoise(uint64_t seed, int64_t gx, int64_t gy) {
  const uint64_t h = MixBits(seed ^ MixBits(static_cast<uint64_t>(gx) * 0x9E3779B97F4A7C15ULL +
                                            static_cast<uint64_t>(gy) * 0xC2B2AE3D27D4EB4FULL));
  return 2.0 * HashUniform(h) - 1.0;
}

// Smooth noise in [-1, 1].
double ValueNoise(uint64_t seed, int x, int y) {
  const int64_t gx = x / kNoiseCell, gy = y / kNoiseCell;
  const double fx = (x % kNoiseCell + 0.5) / kNoiseCell, fy = (y % kNoiseCell + 0.5) / kNoiseCell;
  const double a = CornerNoise(seed, gx, gy), b = CornerNoise(seed, gx + 1, gy);
  const double c = CornerNoise(seed, gx, gy + 1), d = CornerNoise(seed, gx + 1, gy + 1);
  return (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy;
}

// Chamfer 3-4 distance (in thirds of a pixel) from each pixel of the window to the nearest pixel
// where `target(x, y)` holds; the window is [x0, x1) x [y0, y1).
template <typename Pred>
std::vector<int> Chamfer(int x0, int y0, int x1, int y1, Pred target) {
  const int w = x1 - x0, h = y1 - y0;
  std::vector<int> d(static_cast<size_t>(w) * h, kFar);
  auto at = [&](int x, int y) -> int& { return d[static_cast<size_t>(y) * w + x]; };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      if (target(x + x0, y + y0)) at(x, y) = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      int& v = at(x, y);
      if (x > 0) v = std::min(v, at(x - 1, y) + 3);
      if (y > 0) v = std::min(v, at(x, y - 1) + 3);
      if (x > 0 && y > 0) v = std::min(v, at(x - 1, y - 1) + 4);
      if (x + 1 < w && y > 0) v = std::min(v, at(x + 1, y - 1) + 4);
    }
  }
  for (int y = h - 1; y >= 0; --y) {
    for (int x = w - 1; x >= 0; --x) {
      int& v = at(x, y);
      if (x + 1 < w) v = std::min(v, at(x + 1, y) + 3);
      if (y + 1 < h) v = std::min(v, at(x, y + 1) + 3);
      if (x + 1 < w && y + 1 < h) v = std::min(v, at(x + 1, y + 1) + 4);
      if (x > 0 && y + 1 < h) v = std::min(v, at(x - 1, y + 1) + 4);
    }
  }
  return d;
}

}  // namespace

Mask JitterBoundary(const Mask& m, double amplitude_px, uint64_t seed) {
  if (amplitude_px <= 0 || m.none()) return m;
  const Box b = BoxOf(m);
  const int pad = static_cast<int>(std::ceil(amplitude_px)) + 2;
  const int x0 = std::max(0, static_cast<int>(b.x0) - pad);
  const int y0 = std::max(0, static_cast<int>(b.y0) - pad);
  const int x1 = std::min(m.width(), static_cast<int>(b.x1) + pad);
  const int y1 = std::min(m.height(), static_cast<int>(b.y1) + pad);
  // Distance to the nearest outside pixel (for inside pixels) and to the nearest inside pixel.
  const std::vector<int> to_out =
      Chamfer(x0, y0, x1, y1, [&](int x, int y) { return !m.get(x, y); });
  const std::vector<int> to_in = Chamfer(x0, y0, x1, y1, [&](int x, int y) { return m.get(x, y); });
  Mask out(m.width(), m.height());
  const int w = x1 - x0;
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      const size_t i = static_cast<size_t>(y - y0) * w + (x - x0);
      // Window edges count as outside: a pixel on the window's border has no outside pixel in
      // the window only when the mask touches the image edge; then it stays inside.
      const double signed_px = m.get(x, y) ? std::min(to_out[i], kFar / 2) / 3.0 - 0.5
                                           : -(std::min(to_in[i], kFar / 2) / 3.0 - 0.5);
      if (signed_px + amplitude_px * ValueNoise(seed, x, y) > 0) out.set(x, y);
    }
  }
  return out;
}

Mask DropSector(const Mask& m, double start_rad) {
  constexpr double kTwoPi = 6.28318530717958647692;
  const Point c = CentroidOf(m);
  Mask out = m;
  for (int y = 0; y < m.height(); ++y) {
    for (int x = 0; x < m.width(); ++x) {
      if (!m.get(x, y)) continue;
      double a = std::atan2(y + 0.5 - c.y, x + 0.5 - c.x) - start_rad;
      a = std::fmod(a, kTwoPi);
      if (a < 0) a += kTwoPi;
      if (a < kTwoPi / 4) out.set(x, y, false);
    }
  }
  return out;
}

Mask Dilate4(const Mask& m) {
  Mask out = m;
  for (int y = 0; y < m.height(); ++y) {
    for (int x = 0; x < m.width(); ++x) {
      if (!m.get(x, y)) continue;
      if (x > 0) out.set(x - 1, y);
      if (x + 1 < m.width()) out.set(x + 1, y);
      if (y > 0) out.set(x, y - 1);
      if (y + 1 < m.height()) out.set(x, y + 1);
    }
  }
  return out;
}

bool Touching(const Mask& a, const Mask& b) { return Dilate4(a).IntersectionCount(b) > 0; }

}  // namespace tessera::tarot
