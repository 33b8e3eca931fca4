#include "tarot/fmnist_items.h"

#include <algorithm>
#include <cmath>

#include "tarot/fashion_mnist.h"

namespace tessera::tarot {
namespace {

double At(const uint8_t* item, int i, int j) {
  if (i < 0 || j < 0 || i >= kFmnistSide || j >= kFmnistSide) return 0;
  return item[j * kFmnistSide + i];
}

}  // namespace

double ItemIntensity(const uint8_t* item, double cx, double cy, double r, int x, int y) {
  const double scale = kFmnistSide / (2 * r);
  const double su = (x + 0.5 - (cx - r)) * scale - 0.5, sv = (y + 0.5 - (cy - r)) * scale - 0.5;
  const int i = static_cast<int>(std::floor(su)), j = static_cast<int>(std::floor(sv));
  const double fu = su - i, fv = sv - j;
  const double top = At(item, i, j) * (1 - fu) + At(item, i + 1, j) * fu;
  const double bottom = At(item, i, j + 1) * (1 - fu) + At(item, i + 1, j + 1) * fu;
  return top * (1 - fv) + bottom * fv;
}

void ForEachItemPixel(const uint8_t* item, double cx, double cy, double r, int width, int height,
                      const std::function<void(int x, int y, double intensity)>& fn) {
  // Bilinear sampling reaches half a frame pixel (r / 28 px) beyond the frame.
  const double reach = r + r / kFmnistSide + 1;
  const int x0 = std::max(0, static_cast<int>(std::floor(cx - reach)));
  const int x1 = std::min(width - 1, static_cast<int>(std::ceil(cx + reach)));
  const int y0 = std::max(0, static_cast<int>(std::floor(cy - reach)));
  const int y1 = std::min(height - 1, static_cast<int>(std::ceil(cy + reach)));
  for (int y = y0; y <= y1; ++y) {
    for (int x = x0; x <= x1; ++x) {
      const double v = ItemIntensity(item, cx, cy, r, x, y);
      if (v > kItemThreshold) fn(x, y, v);
    }
  }
}

double ItemShade(double intensity) {
  const double t = std::clamp((intensity - kItemThreshold) / (255 - kItemThreshold), 0.0, 1.0);
  return kItemShadeLow + (kItemShadeHigh - kItemShadeLow) * t;
}

}  // namespace tessera::tarot
