// The fashion-item classifier of the pixels-only backends (`classical` segmenter, `rule`
// reasoner) on the fmnist set: which of the ten Fashion-MNIST classes (tarot/fashion_mnist.h) a
// region of a composited scene shows. It sees only what the segmenter sees -- a region of the
// image -- never the scene program.
//   RegionInput    the classifier's view of a region: the region's bounding box is cut out, each
//                  region pixel's luminance (0.299 R + 0.587 G + 0.114 B) is min-max normalised
//                  within the region to [0.2, 1] (the tint and its brightness gone; a flat region
//                  is all 1), pixels outside the region are 0, and the crop is resized (aspect
//                  kept, the longer side to 28 px, centred; cv::resize, INTER_AREA when
//                  shrinking, INTER_LINEAR when growing) into 28 x 28 values.
//   RenderedInput  RegionInput of a dataset item drawn as an fmnist scene draws it
//                  (tarot/fmnist_items.h: half-size `half_size_px`, tinted `tint`), alone.
//   FmnistClassifier  multinomial logistic regression (784 inputs + bias -> 10 classes, softmax),
//                  trained by plain SGD on the cross-entropy with L2 decay over RenderedInput of
//                  the TRAINING split's items, each drawn once at a seeded half-size in [14, 28]
//                  px and palette tint (kept as bytes, 47 MB for the 60000 items, during
//                  training), visited in a seeded order per epoch; the learning rate falls
//                  linearly to 0 over the epochs. Deterministic: the same data and options give
//                  the same weights, bit for bit (one thread, core::Rng).
//   SharedFmnistClassifier  trained once per process on first use (default options, the
//                  training split from SharedFmnist of the folder at that time) and kept; about
//                  6 s on one core of the 2-core VM.
// Accuracy on the test split (RenderedInput at half-size 24, a tint per item) is measured by
// TestAccuracy; docs/tarot.md reports it.
// Errors: the dataset's (tarot/fashion_mnist.h); InvalidArgument for bad options.
// Thread-safety: a trained classifier is immutable (Probabilities is const and reentrant);
// SharedFmnistClassifier is thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "tarot/fashion_mnist.h"
#include "tarot/types.h"

namespace tessera::tarot {

using ItemInput = std::array<float, kFmnistPixels>;
using ClassProbabilities = std::array<double, kFmnistClasses>;

ItemInput RegionInput(const Image& image, const Mask& region);
ItemInput RenderedInput(const uint8_t* item, double half_size_px, Rgb tint);

struct FmnistClassifierOptions {
  int epochs = 6;
  double learning_rate = 0.02;  // initial step
  double l2 = 1e-5;             // weight decay per step
  uint64_t seed = 1;
  int max_items = 0;  // train on the first max_items of the seeded order (0: all)
};

class FmnistClassifier {
 public:
  static core::StatusOr<FmnistClassifier> Train(const FmnistData& train,
                                                const FmnistClassifierOptions& options = {});
  // Per label (0..9), summing to 1.
  ClassProbabilities Probabilities(const ItemInput& input) const;
  int Predict(const ItemInput& input) const;

 private:
  std::vector<float> weights_;  // kFmnistClasses x (kFmnistPixels + 1), the bias last
};

// The fraction of the first `max_items` items of `test` (0: all) whose RenderedInput (half-size
// 24 px, palette colour item % 10) the classifier labels correctly.
double TestAccuracy(const FmnistClassifier& classifier, const FmnistData& test, int max_items = 0);

core::StatusOr<std::shared_ptr<const FmnistClassifier>> SharedFmnistClassifier();

}  // namespace tessera::tarot
