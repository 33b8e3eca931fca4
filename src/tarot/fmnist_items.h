// How a Fashion-MNIST item (tarot/fashion_mnist.h) is drawn into an fmnist scene, shared by the
// scene renderer (tarot/scene.h) and the training of the item classifier
// (tarot/fmnist_classifier.h), so that the classifier learns from what the scenes show.
//   placement  the item's 28 x 28 frame covers [cx - r, cx + r] x [cy - r, cy + r] (pixels;
//              r = the object's half-size), so 28 px become 2r px;
//   intensity  at a pixel: the item's grey value (0..255) sampled bilinearly at the pixel's
//              centre (frame pixel i covers [i, i + 1); outside the frame the value is 0);
//   mask       the pixels whose intensity exceeds kItemThreshold: exact, and the same test
//              everywhere (rendering, occlusion during generation, tests);
//   tint       the object's palette colour times ItemShade(intensity), a factor rising linearly
//              from kItemShadeLow at the threshold to kItemShadeHigh at 255 (the item's own
//              shading modulates the tint, within the brightness range the colour quantisers
//              of the pixels-only backends accept).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>

namespace tessera::tarot {

inline constexpr double kItemThreshold = 48;  // grey value, 0..255
inline constexpr double kItemShadeLow = 0.82, kItemShadeHigh = 1.18;

// The bilinear intensity (0..255) of `item` (784 bytes) placed at (cx, cy) with half-size r, at
// the centre of pixel (x, y).
double ItemIntensity(const uint8_t* item, double cx, double cy, double r, int x, int y);

// Calls fn(x, y, intensity) for every pixel of the width x height image whose intensity exceeds
// kItemThreshold, row by row.
void ForEachItemPixel(const uint8_t* item, double cx, double cy, double r, int width, int height,
                      const std::function<void(int x, int y, double intensity)>& fn);

// The brightness factor of the tint at `intensity` (> kItemThreshold).
double ItemShade(double intensity);

}  // namespace tessera::tarot
