// HandcraftedFeatures (registry name `handcrafted`): DINOv3's role played by hand-made patch
// descriptors. The image is cut into 8x8-pixel patches (stride 8; the grid is ceil(W/8) x
// ceil(H/8), edge patches hold the pixels that remain). Per patch, 24 numbers:
//   Lab colour     mean L/100, a/100, b/100 and standard deviations L/50, a/50, b/50 (sRGB D65);
//   gradients      8-bin histogram of Sobel gradient orientation on L (unsigned, [0, pi)),
//                  magnitude-weighted, L1-normalised, times 0.5 x min(1, mean magnitude / 20) so
//                  that flat patches carry no orientation;
//   texture        10-bin rotation-invariant uniform LBP histogram (8 neighbours on L, edges
//                  clamped; bins 0..8 = uniform codes by their count of ones, 9 = the rest),
//                  L1-normalised, times 0.5;
// then the whole vector is L2-normalised (a patch whose vector is zero gets e0). Deterministic:
// fixed arithmetic order, no randomness.
// Thread-safety: Extract is const; safe to call concurrently.
#pragma once

#include "core/registry.h"
#include "tarot/features.h"

namespace tessera::tarot {

inline constexpr int kHandcraftedStride = 8;
inline constexpr int kHandcraftedDim = 24;

class HandcraftedFeatures : public FeatureExtractor {
 public:
  std::string name() const override { return "handcrafted"; }
  core::StatusOr<PatchGrid> Extract(const Image& image) const override;
};

// CIE Lab of an sRGB pixel (D65 white).
void RgbToLab(Rgb c, float* lab);

}  // namespace tessera::tarot
