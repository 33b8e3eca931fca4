#include "tarot/features.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace tessera::tarot {

namespace {

// Interpolation between patch centres along one axis: the pixel centre p + 0.5 sits at patch
// coordinate u = (p + 0.5) / stride - 0.5, clamped to [0, n - 1]; lo/hi are the neighbouring
// patches and frac the weight of hi.
struct Tap {
  int lo = 0, hi = 0;
  double frac = 0;
};

std::vector<Tap> Taps(int pixels, int patches, int stride) {
  std::vector<Tap> taps(static_cast<size_t>(std::max(pixels, 0)));
  for (int p = 0; p < pixels; ++p) {
    const double u = std::clamp((p + 0.5) / stride - 0.5, 0.0, static_cast<double>(patches - 1));
    Tap& t = taps[static_cast<size_t>(p)];
    t.lo = static_cast<int>(std::floor(u));
    t.hi = std::min(t.lo + 1, patches - 1);
    t.frac = u - t.lo;
  }
  return taps;
}

int PatchIndex(double v, int stride, int patches) {
  const double g = std::floor(v / stride);
  return static_cast<int>(std::clamp(g, 0.0, static_cast<double>(patches - 1)));
}

}  // namespace

std::vector<float> SimilarityMap(const PatchGrid& grid, const std::vector<Point>& points,
                                 Combine combine, int width, int height) {
  const size_t pixels = static_cast<size_t>(std::max(width, 0)) * std::max(height, 0);
  std::vector<float> out(pixels, 0.0f);
  if (points.empty() || grid.grid_w <= 0 || grid.grid_h <= 0 || pixels == 0) return out;
  CHECK_GT(grid.stride, 0);
  CHECK_EQ(grid.features.size(), static_cast<size_t>(grid.grid_w) * grid.grid_h * grid.dim);
  const int gw = grid.grid_w, gh = grid.grid_h;
  const size_t cells = static_cast<size_t>(gw) * gh;

  // Per point: the cosine of its patch's feature with every patch, clamped to [-1, 1].
  std::vector<std::vector<double>> sims(points.size(), std::vector<double>(cells));
  for (size_t p = 0; p < points.size(); ++p) {
    const float* f =
        grid.at(PatchIndex(points[p].x, grid.stride, gw), PatchIndex(points[p].y, grid.stride, gh));
    for (size_t c = 0; c < cells; ++c) {
      const float* g = grid.features.data() + c * grid.dim;
      double dot = 0;
      for (int d = 0; d < grid.dim; ++d) dot += static_cast<double>(f[d]) * g[d];
      sims[p][c] = std::clamp(dot, -1.0, 1.0);
    }
  }

  // Per pixel: each point's map interpolated bilinearly, then combined over points.
  const std::vector<Tap> tx = Taps(width, gw, grid.stride);
  const std::vector<Tap> ty = Taps(height, gh, grid.stride);
  const double n = static_cast<double>(points.size());
  for (int y = 0; y < height; ++y) {
    const Tap& a = ty[static_cast<size_t>(y)];
    for (int x = 0; x < width; ++x) {
      const Tap& b = tx[static_cast<size_t>(x)];
      double acc = 0;
      for (const std::vector<double>& s : sims) {
        const double top = s[static_cast<size_t>(a.lo) * gw + b.lo] * (1 - b.frac) +
                           s[static_cast<size_t>(a.lo) * gw + b.hi] * b.frac;
        const double bottom = s[static_cast<size_t>(a.hi) * gw + b.lo] * (1 - b.frac) +
                              s[static_cast<size_t>(a.hi) * gw + b.hi] * b.frac;
        const double v = top * (1 - a.frac) + bottom * a.frac;
        acc += combine == Combine::kHarmonic ? 1.0 / std::clamp(v, 1e-6, 1.0) : v;
      }
      out[static_cast<size_t>(y) * width + x] =
          static_cast<float>(combine == Combine::kHarmonic ? n / acc : acc / n);
    }
  }
  return out;
}

}  // namespace tessera::tarot
