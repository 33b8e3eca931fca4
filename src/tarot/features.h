// FeatureExtractor: dense patch features of an image (DINOv3's role) and the similarity maps MSR
// compares regions with.
//   Extract(image)  a PatchGrid: grid_h x grid_w patches of `stride` pixels, each a feature
//                   vector of `dim` floats, L2-normalised (so a dot product is a cosine).
//   SimilarityMap(grid, points, combine, width, height)  per point, the cosine similarity of
//                   the feature of the patch holding the point (floor(x / stride), clamped to
//                   the grid) with every patch, upsampled to the pixel centres bilinearly
//                   between patch centres (a pixel centre p + 0.5 sits at patch coordinate
//                   (p + 0.5) / stride - 0.5, clamped to the grid); then, per pixel, combined
//                   over the points by the harmonic mean (values clamped to [1e-6, 1] first,
//                   so the result is in [1e-6, 1]) or the arithmetic mean (in [-1, 1]). No
//                   points or an empty grid: all zeros.
// Backends (registry "tarot.features"): `handcrafted` (per patch: Lab mean and std, gradient
// orientation and LBP histograms), and later learned ones.
// Thread-safety: Extract is const and may run concurrently.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/types.h"

namespace tessera::tarot {

struct PatchGrid {
  int grid_w = 0, grid_h = 0, dim = 0, stride = 0;
  std::vector<float> features;  // (grid_h * grid_w) x dim, row-major by patch
  const float* at(int gx, int gy) const {
    return features.data() + (static_cast<size_t>(gy) * grid_w + gx) * dim;
  }
};

enum class Combine { kHarmonic, kMean };

class FeatureExtractor {
 public:
  virtual ~FeatureExtractor() = default;
  virtual std::string name() const = 0;
  virtual core::StatusOr<PatchGrid> Extract(const Image& image) const = 0;
};

// The similarity map of `points` over a width x height image (row-major), as described above.
std::vector<float> SimilarityMap(const PatchGrid& grid, const std::vector<Point>& points,
                                 Combine combine, int width, int height);

}  // namespace tessera::tarot
