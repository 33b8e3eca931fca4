#include "tarot/handcrafted_features.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "tarot/backends.h"

namespace tessera::tarot {
namespace {

constexpr int kOrientationBins = 8, kLbpBins = 10;
constexpr double kPi = 3.14159265358979323846;
constexpr double kGradientScale = 20.0;  // mean Sobel magnitude (L units) of a full-weight patch

double Linear(uint8_t v) {
  const double c = v / 255.0;
  return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

double LabF(double t) {
  constexpr double kDelta = 6.0 / 29.0;
  return t > kDelta * kDelta * kDelta ? std::cbrt(t) : t / (3 * kDelta * kDelta) + 4.0 / 29.0;
}

// Rotation-invariant uniform LBP bin of the 8 neighbour bits (clockwise from top-left).
int LbpBin(unsigned code) {
  int ones = 0, transitions = 0;
  for (int i = 0; i < 8; ++i) {
    const unsigned a = (code >> i) & 1u, b = (code >> ((i + 1) % 8)) & 1u;
    ones += static_cast<int>(a);
    transitions += a != b;
  }
  return transitions <= 2 ? ones : 9;
}

}  // namespace

void RgbToLab(Rgb c, float* lab) {
  const double r = Linear(c.r), g = Linear(c.g), b = Linear(c.b);
  const double x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047;
  const double y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b;
  const double z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883;
  const double fx = LabF(x), fy = LabF(y), fz = LabF(z);
  lab[0] = static_cast<float>(116 * fy - 16);
  lab[1] = static_cast<float>(500 * (fx - fy));
  lab[2] = static_cast<float>(200 * (fy - fz));
}

core::StatusOr<PatchGrid> HandcraftedFeatures::Extract(const Image& image) const {
  if (image.empty() || image.pixels.size() != static_cast<size_t>(image.width) * image.height) {
    return core::InvalidArgument("tarot.features 'handcrafted': got a " +
                                 std::to_string(image.width) + "x" + std::to_string(image.height) +
                                 " image with " + std::to_string(image.pixels.size()) +
                                 " pixels, must be non-empty and complete");
  }
  const int w = image.width, h = image.height;
  std::vector<float> lab(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < image.pixels.size(); ++i) RgbToLab(image.pixels[i], &lab[3 * i]);
  auto L = [&](int x, int y) {
    x = std::clamp(x, 0, w - 1);
    y = std::clamp(y, 0, h - 1);
    return lab[3 * (static_cast<size_t>(y) * w + x)];
  };
  PatchGrid grid;
  grid.stride = kHandcraftedStride;
  grid.grid_w = (w + kHandcraftedStride - 1) / kHandcraftedStride;
  grid.grid_h = (h + kHandcraftedStride - 1) / kHandcraftedStride;
  grid.dim = kHandcraftedDim;
  grid.features.assign(static_cast<size_t>(grid.grid_w) * grid.grid_h * grid.dim, 0.0f);
  for (int gy = 0; gy < grid.grid_h; ++gy) {
    for (int gx = 0; gx < grid.grid_w; ++gx) {
      const int x0 = gx * kHandcraftedStride, y0 = gy * kHandcraftedStride;
      const int x1 = std::min(w, x0 + kHandcraftedStride),
                y1 = std::min(h, y0 + kHandcraftedStride);
      std::array<double, 3> sum{}, sum2{};
      std::array<double, kOrientationBins> orient{};
      std::array<double, kLbpBins> lbp{};
      double magnitude = 0;
      int n = 0;
      for (int y = y0; y < y1; ++y) {
        for (int x = x0; x < x1; ++x) {
          const float* p = &lab[3 * (static_cast<size_t>(y) * w + x)];
          for (int k = 0; k < 3; ++k) {
            sum[k] += p[k];
            sum2[k] += static_cast<double>(p[k]) * p[k];
          }
          const double sx = (L(x + 1, y - 1) + 2 * L(x + 1, y) + L(x + 1, y + 1)) -
                            (L(x - 1, y - 1) + 2 * L(x - 1, y) + L(x - 1, y + 1));
          const double sy = (L(x - 1, y + 1) + 2 * L(x, y + 1) + L(x + 1, y + 1)) -
                            (L(x - 1, y - 1) + 2 * L(x, y - 1) + L(x + 1, y - 1));
          const double mag = std::hypot(sx, sy) / 8.0;
          if (mag > 0) {
            double angle = std::atan2(sy, sx);
            if (angle < 0) angle += kPi;
            const int bin =
                std::min(kOrientationBins - 1, static_cast<int>(angle / kPi * kOrientationBins));
            orient[bin] += mag;
            magnitude += mag;
          }
          const float c = L(x, y);
          const float nb[8] = {L(x - 1, y - 1), L(x, y - 1), L(x + 1, y - 1), L(x + 1, y),
                               L(x + 1, y + 1), L(x, y + 1), L(x - 1, y + 1), L(x - 1, y)};
          unsigned code = 0;
          for (int k = 0; k < 8; ++k) code |= static_cast<unsigned>(nb[k] >= c) << k;
          lbp[LbpBin(code)] += 1;
          ++n;
        }
      }
      float* f = grid.features.data() + (static_cast<size_t>(gy) * grid.grid_w + gx) * grid.dim;
      const double scale_mean[3] = {100, 100, 100}, scale_std[3] = {50, 50, 50};
      for (int k = 0; k < 3; ++k) {
        const double mean = sum[k] / n;
        const double var = std::max(0.0, sum2[k] / n - mean * mean);
        f[k] = static_cast<float>(mean / scale_mean[k]);
        f[3 + k] = static_cast<float>(std::sqrt(var) / scale_std[k]);
      }
      const double g_weight = 0.5 * std::min(1.0, magnitude / n / kGradientScale);
      for (int b = 0; b < kOrientationBins; ++b)
        f[6 + b] = magnitude > 0 ? static_cast<float>(g_weight * orient[b] / magnitude) : 0.0f;
      for (int b = 0; b < kLbpBins; ++b)
        f[6 + kOrientationBins + b] = static_cast<float>(0.5 * lbp[b] / n);
      double norm2 = 0;
      for (int k = 0; k < grid.dim; ++k) norm2 += static_cast<double>(f[k]) * f[k];
      if (norm2 <= 0) {
        f[0] = 1.0f;
        continue;
      }
      const double inv = 1.0 / std::sqrt(norm2);
      for (int k = 0; k < grid.dim; ++k) f[k] = static_cast<float>(f[k] * inv);
    }
  }
  return grid;
}

FeaturesRegistry::Entry HandcraftedFeaturesEntry() {
  auto create = [](const BackendContext&) -> core::StatusOr<std::unique_ptr<FeatureExtractor>> {
    return std::unique_ptr<FeatureExtractor>(new HandcraftedFeatures());
  };
  return {{.reads_scene = false, .create = create},
          "handcrafted",
          "per 8x8 patch: Lab mean/std, gradient-orientation and LBP histograms, L2-normalised",
          [] { return std::unique_ptr<FeatureExtractor>(new HandcraftedFeatures()); },
          {}};
}

}  // namespace tessera::tarot
