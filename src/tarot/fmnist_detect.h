// Fashion items found in an fmnist image from pixels alone -- what the pixels-only backends
// (`classical` segmenter, `rule` reasoner) see on the fmnist set; never the scene program.
//   regions   per palette colour (from the caller's per-pixel labels: palette index, or -1 for
//             background), the pixels of that colour closed with a 3 x 3 square (so that an
//             item's thin gaps and dark creases, where its intensity falls under the threshold,
//             do not cut it), split into 8-connected components; each component's pixels of
//             that colour (not the closing's) of at least `min_area` are one item region;
//   class     the item classifier (tarot/fmnist_classifier.h) on RegionInput(image, region):
//             the most probable label and the runner-up with their probabilities;
//   size      the size class of the half-size the region's box implies: max(w, h) / 2 divided
//             by kItemFrameFill (an item spans 0.99 of its 28 px frame along its longer side,
//             measured over the test split), as a fraction of the image's shorter side.
// Items of one colour that touch are one region (the classifier then reads their union).
// Ordered by the row-major position of the first pixel of each region, colours in palette
// order. AnalyseFmnistImage gives the same items as the `classical` segmenter's analysis: each
// item an object (category, runner-up, distance 1 - probability, confidence = probability).
// Errors: the classifier's (the dataset missing).
// Thread-safety: pure functions over the shared, immutable classifier.
#pragma once

#include <vector>

#include "core/status.h"
#include "tarot/classical_regions.h"
#include "tarot/fmnist_classifier.h"
#include "tarot/types.h"

namespace tessera::tarot {

inline constexpr double kItemFrameFill = 0.99;

struct ItemRegion {
  Mask mask;
  int colour = -1;                 // palette index
  int label = -1, runner_up = -1;  // Fashion-MNIST labels
  double probability = 0, runner_up_probability = 0;
  int size = 0;  // size class
};

core::StatusOr<std::vector<ItemRegion>> FindItems(const Image& image,
                                                  const std::vector<int>& labels, int min_area);

// The `classical` segmenter's analysis of an fmnist image: quantised labels (QuantiseImage), the
// items of FindItems as its colour regions and its objects, the whole foreground as one blob.
core::StatusOr<ClassicalAnalysis> AnalyseFmnistImage(const Image& image, int min_area);

}  // namespace tessera::tarot
