// Seeded mask perturbations, the synthetic segmenter's boundary and part errors:
//   JitterBoundary  moves the boundary in and out by up to `amplitude_px`: a pixel is kept when
//                   its signed distance to the boundary (chamfer 3-4, inside positive, measured
//                   from pixel centres: +-0.5 at the boundary) plus a smooth noise field in
//                   [-amplitude, amplitude] (value noise on a 8 px grid, hashed from `seed`) is
//                   positive. Amplitude 0 returns the mask unchanged.
//   DropSector      removes the pixels whose direction from the centroid lies in the 90 degree
//                   sector starting at `start_rad` (y down, so pi/2 points down).
//   Dilate4         grows a mask by one pixel (4-neighbourhood); Touching is whether one mask's
//                   dilation meets the other.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "tarot/types.h"

namespace tessera::tarot {

Mask JitterBoundary(const Mask& m, double amplitude_px, uint64_t seed);
Mask DropSector(const Mask& m, double start_rad);
Mask Dilate4(const Mask& m);
bool Touching(const Mask& a, const Mask& b);

}  // namespace tessera::tarot
