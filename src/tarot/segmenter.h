// Segmenter: the promptable concept segmenter Tarot-SAM3 drives (SAM3's role). SetImage once per
// image, then prompts:
//   SegmentText(phrase)    every instance of the concept the phrase names (SAM3's PCS semantics),
//   each
//                          with a score in [0, 1]; none when the phrase names nothing it
//                          recognises.
//   SegmentBox(box)        the instances inside a box prompt (at least the best one).
//   SegmentPoints(points)  one mask from positive and negative points (the interactive head),
//                          optionally within a box.
// Results are sorted by score, descending (ties: the instance's first pixel in row-major order).
// Errors: FailedPrecondition before SetImage; InvalidArgument for a box outside the image or an
// empty point list. An empty result is not an error.
// Backends (registry "tarot.segmenter"): `synthetic` (reads the scene program, with seeded error
// knobs), `classical` (pixels only: colour and shape components, GrabCut for boxes and points).
// Thread-safety: one query at a time per instance.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/types.h"

namespace tessera::tarot {

struct SegmenterCapabilities {
  bool text = true, box = true, points = true;
};

class Segmenter {
 public:
  virtual ~Segmenter() = default;
  virtual std::string name() const = 0;
  virtual SegmenterCapabilities capabilities() const { return {}; }
  virtual core::Status SetImage(const Image& image) = 0;
  virtual core::StatusOr<std::vector<Instance>> SegmentText(const std::string& phrase) = 0;
  virtual core::StatusOr<std::vector<Instance>> SegmentBox(const Box& box) = 0;
  virtual core::StatusOr<std::vector<Instance>> SegmentPoints(const std::vector<Point>& points,
                                                              std::optional<Box> within) = 0;
};

}  // namespace tessera::tarot
