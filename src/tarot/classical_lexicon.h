// The colour and shape lexicon of the `classical` segmenter: what the refscenes vocabulary's
// words look like in pixels, learned from nothing but the vocabulary itself (the palette and the
// category silhouettes of tarot/vocabulary.h and tarot/silhouettes.h), never from a scene.
//   QuantiseColour   a pixel -> the nearest palette colour allowing a brightness scale in
//                    [0.8, 1.25] (textures shade colours by up to +-12%), or kBackground when
//                    every channel is >= 190 (the pale backgrounds; every palette colour keeps
//                    a channel of at most 160 after scaling).
//   Describe         shape descriptors of a mask's largest outer contour (OpenCV): circularity
//                    4 pi A / P^2, extent A / bbox area, solidity A / convex hull area, the
//                    vertex count of cv::approxPolyDP at 2.5% of the perimeter, and the bbox
//                    aspect as log(w / h); A is the mask's pixel count, P and the hull's area
//                    are taken half a pixel outside the contour (which runs through pixel
//                    centres) so that they compare with a pixel count.
//   Lexicon          one prototype per category (simple shapes and things) and mirroring,
//                    rendered from its silhouette at three sizes (half-sizes 16, 32 and 64 px);
//                    RankCategories orders the categories by the distance of a mask's
//                    descriptors to their nearest prototype, combined with how well the
//                    category's silhouette stretched over the mask's box covers it.
// Distance: sqrt(sum w_k (d_k - p_k)^2) over circularity, extent, solidity (weight 1 each),
// min(vertices, 12) / 12 (weight 0.5) and the aspect (weight 0.25).
// Thread-safety: the lexicon is built on first use (thread-safe static); functions are pure.
#pragma once

#include <vector>

#include "tarot/types.h"

namespace tessera::tarot {

inline constexpr int kBackground = -1;

// Palette index (tarot/vocabulary.h) or kBackground.
int QuantiseColour(Rgb c);
// Per pixel, row-major.
std::vector<int> QuantiseImage(const Image& image);

struct ShapeDescriptors {
  bool valid = false;  // false for an empty mask
  double circularity = 0, extent = 0, solidity = 0, aspect_log = 0;
  int vertices = 0;
};
ShapeDescriptors Describe(const Mask& mask);
double DescriptorDistance(const ShapeDescriptors& a, const ShapeDescriptors& b);

// The IoU of `mask` with category `category`'s silhouette stretched over the mask's box (the
// better of the two mirrorings); 0 for an empty mask.
double TemplateFit(const Mask& mask, int category);

struct CategoryMatch {
  int category = -1;  // index into Categories()
  double distance = 0;
};
// Every category (or only the simple shapes), nearest first (ties: lower index). The distance
// combines the descriptors' distance to the category's nearest prototype, D, and the template
// misfit 1 - TemplateFit, M: sqrt(D^2 + M^2).
std::vector<CategoryMatch> RankCategories(const Mask& mask, bool shapes_only);

}  // namespace tessera::tarot
