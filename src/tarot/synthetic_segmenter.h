// SyntheticSegmenter (registry name `synthetic`): a SAM3 stand-in that reads the refscenes scene
// it was built with and answers prompts from its exact masks, with seeded error knobs that mimic
// SAM3's weaknesses.
//   SegmentText(phrase)  the phrase (cut to 100 characters, as the authors' code does) is read
//       with the grammar parser without facts (tarot/query_parser.h): category or generic noun,
//       colour, size, part words; ordinals are ignored (a concept prompt names every instance).
//       It fails (returns nothing) on phrases over `max_words` words, on phrases with a relation
//       word (left, above, next, ...) unless `fail_on_relations` is off, and on phrases that name
//       no category, part or attribute (implicit phrases). Otherwise every matching object (or
//       the named part of each) is an instance.
//   SegmentBox(box)  every object and part whose mask lies at least half inside the box, best
//       box fit first (score 0.5 + 0.49 x IoU of its mask's box with the prompt); when none lies
//       half inside, the best-fitting one that meets the box.
//   SegmentPoints(points, within)  per object under a positive point: the part under them when
//       all of them hit one part of a thing, else the whole object, with the error knobs drawn;
//       then clicks are honoured (SAM's interactive head is trained to): the part (or shape)
//       under each positive point is added back if an error removed it, and the part (or
//       object) under each negative point is taken out; clipped to `within`. One instance (or
//       none).
// Scores: 0.7 + 0.25 x the unit's visible fraction (text and points), plus noise.
// Error knobs, each drawn per (prompt, instance) from `seed` (a hash: the answer to a prompt does
// not depend on earlier prompts):
//   over_seg     probability a part comes back as its whole object, or an object merged with a
//                touching one;
//   under_seg    probability a thing loses one of its non-main parts, or a shape or part loses a
//                quarter sector;
//   jitter_px    boundary displacement amplitude (mask_perturb.h), every instance;
//   score_noise  standard deviation of a normal added to every score (then clamped to [0, 1]).
// With all four at zero, SegmentText returns the exact masks.
// Errors: FailedPrecondition without a scene or before SetImage, or for an image that is not the
// scene's; InvalidArgument for a box that misses the image, no points, or a point outside it.
// Thread-safety: one query at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/registry.h"
#include "core/status.h"
#include "tarot/scene.h"
#include "tarot/segmenter.h"

namespace tessera::tarot {

struct SyntheticSegmenterOptions {
  uint64_t seed = 0;
  int max_words = 8;
  bool fail_on_relations = true;
  double over_seg = 0, under_seg = 0;
  double jitter_px = 0;
  double score_noise = 0;
};

// From registry options synthetic.seed, synthetic.max_words (1..100), synthetic.relations
// ("fail" or "ignore"), synthetic.over_seg, synthetic.under_seg (0..1), synthetic.jitter_px
// (0..32), synthetic.score_noise (0..1).
core::StatusOr<SyntheticSegmenterOptions> ParseSyntheticSegmenterOptions(
    const core::RegistryOptions& options);

class SyntheticSegmenter : public Segmenter {
 public:
  SyntheticSegmenter(std::shared_ptr<const Scene> scene, SyntheticSegmenterOptions options);
  std::string name() const override { return "synthetic"; }
  core::Status SetImage(const Image& image) override;
  core::StatusOr<std::vector<Instance>> SegmentText(const std::string& phrase) override;
  core::StatusOr<std::vector<Instance>> SegmentBox(const Box& box) override;
  core::StatusOr<std::vector<Instance>> SegmentPoints(const std::vector<Point>& points,
                                                      std::optional<Box> within) override;

 private:
  // An object (part = -1) or one of its parts.
  struct Unit {
    int object = 0;
    int part = -1;
  };
  const Mask& MaskOf(const Unit& u) const;
  double VisibleFraction(const Unit& u) const;
  // The unit's mask after the over/under-segmentation and jitter knobs, drawn from `key`.
  Mask Perturbed(const Unit& u, uint64_t key) const;
  double Score(double base, uint64_t key) const;
  core::Status Ready() const;

  std::shared_ptr<const Scene> scene_;
  SyntheticSegmenterOptions options_;
  bool image_set_ = false;
  std::vector<int16_t> owner_;  // per pixel: visible object or -1
  std::vector<int8_t> part_;    // per pixel: its part or -1
};

}  // namespace tessera::tarot
