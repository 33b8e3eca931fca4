// ClassicalSegmenter (registry name `classical`): a SAM3 stand-in that sees pixels only -- no
// scene program -- through the colour and shape lexicon of tarot/classical_lexicon.h and the
// objects tarot/classical_regions.h finds in the image; on the fmnist set (the backend context's
// `set`, the vocabulary its images are drawn from) the objects are instead the fashion items of
// tarot/fmnist_detect.h, classified by the item classifier trained from the dataset's training
// split (a category's distance is 1 - its probability, its confidence the probability).
//   SegmentText(phrase)  the phrase (cut to 100 characters, as the authors' code does) is read
//       with the refscenes grammar parser without facts (tarot/query_parser.h); its target's
//       category (or generic noun), colour, size and part select objects, PCS style: every
//       object that matches is an instance (ordinals and relations are ignored, the reference
//       side of a relation too). An object matches a category when it is its nearest one, or
//       its runner-up within `runner_up_margin` (at a lower score); a size that does not match
//       halves the score instead of dropping the object. Score: 0.5 + 0.49 x confidence. A
//       phrase that names no category, part or attribute returns nothing.
//   SegmentBox(box)  cv::grabCut initialised with the box on a crop around it (the box grown by
//       `margin` of its size per side), the largest 4-connected component of the foreground;
//       plus every object and part at least half inside the box. Scores 0.5 + 0.49 x IoU of the
//       instance's box with the prompt box.
//   SegmentPoints(points, within)  cv::grabCut initialised with a mask: the colour regions under
//       positive points probably foreground, a 2 px disc at each positive point surely
//       foreground, negative points' discs surely background (and their regions probably
//       background), the rest probably background; on `within` (grown by `margin`, outside it
//       surely background) or, without it, on the box of the regions under the positive points
//       grown by `margin`. The components holding a positive point form the one instance
//       (score 0.5 + 0.49 x the share of positive points inside, minus negatives inside).
// GrabCut runs `iterations` rounds with OpenCV's random generator reseeded before each call, so
// a prompt's answer does not depend on earlier prompts. Box and point answers are cached per
// image (the benchmark asks the same prompts from several systems); setting an equal image
// keeps the analysis and the cache.
// Errors: FailedPrecondition before SetImage or for an empty image; InvalidArgument for a box
// that misses the image, no points, or a point outside the image; on fmnist, SetImage passes on
// the item classifier's error (the dataset missing).
// Thread-safety: one query at a time.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/registry.h"
#include "core/status.h"
#include "tarot/backends.h"
#include "tarot/classical_regions.h"
#include "tarot/segmenter.h"

namespace tessera::tarot {

struct ClassicalSegmenterOptions {
  int iterations = 3;              // GrabCut rounds
  double margin = 0.25;            // crop growth, x the box size per side
  int min_area = 12;               // pixels of the smallest colour region kept
  double runner_up_margin = 0.05;  // descriptor distance
  std::string set = "refscenes";   // refscenes or fmnist: how objects are found (not an option)
};

// From registry options classical.iterations (1..10), classical.margin (0..2),
// classical.min_area (1..10000), classical.runner_up_margin (0..1).
core::StatusOr<ClassicalSegmenterOptions> ParseClassicalSegmenterOptions(
    const core::RegistryOptions& options);

class ClassicalSegmenter : public Segmenter {
 public:
  explicit ClassicalSegmenter(ClassicalSegmenterOptions options = {});
  std::string name() const override { return "classical"; }
  core::Status SetImage(const Image& image) override;
  core::StatusOr<std::vector<Instance>> SegmentText(const std::string& phrase) override;
  core::StatusOr<std::vector<Instance>> SegmentBox(const Box& box) override;
  core::StatusOr<std::vector<Instance>> SegmentPoints(const std::vector<Point>& points,
                                                      std::optional<Box> within) override;
  // What SetImage found in the image (objects, parts, colour regions), for tests.
  const ClassicalAnalysis& analysis() const { return analysis_; }

 private:
  core::Status Ready() const;
  std::vector<Instance> BoxUncached(const Box& box) const;
  std::vector<Instance> PointsUncached(const std::vector<Point>& points,
                                       std::optional<Box> within) const;

  ClassicalSegmenterOptions options_;
  bool image_set_ = false;
  Image image_;
  ClassicalAnalysis analysis_;
  std::map<std::string, std::vector<Instance>> cache_;
};

SegmenterRegistry::Entry ClassicalSegmenterEntry();

}  // namespace tessera::tarot
