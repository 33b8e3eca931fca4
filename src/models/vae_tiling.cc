#include "models/vae_tiling.h"

#include <algorithm>

namespace tessera::models {

int64_t TileHaloLatentPixels(int64_t blocks) {
  // Corrupted output pixels next to an interior edge, at each block's resolution.
  int64_t corrupted = 1;  // block 0's conv at latent resolution
  for (int64_t b = 1; b < blocks; ++b) corrupted = 2 * corrupted + 1;  // upsample, conv
  corrupted += 1;                                                      // the last conv
  const int64_t spatial_factor = int64_t{1} << (blocks - 1);
  return (corrupted + spatial_factor - 1) / spatial_factor;
}

std::vector<TileSpan> TileSpans(int64_t extent, int64_t tiles, int64_t halo) {
  const int64_t t = std::min(tiles, extent);
  std::vector<TileSpan> spans(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) {
    TileSpan& s = spans[static_cast<size_t>(i)];
    s.core_begin = i * extent / t;
    s.core_end = (i + 1) * extent / t;
    s.begin = std::max<int64_t>(0, s.core_begin - halo);
    s.end = std::min(extent, s.core_end + halo);
  }
  return spans;
}

double TiledComputeFactor(int64_t height, int64_t width, int64_t tiles, int64_t halo) {
  auto covered = [&](int64_t extent) {
    int64_t sum = 0;
    for (const TileSpan& s : TileSpans(extent, tiles, halo)) sum += s.size();
    return static_cast<double>(sum) / static_cast<double>(extent);
  };
  return covered(height) * covered(width);
}

}  // namespace tessera::models
