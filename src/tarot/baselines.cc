#include "tarot/baselines.h"

#include <vector>

namespace tessera::tarot {

core::StatusOr<Mask> NaiveText(const std::string& query, int width, int height,
                               TracedSegmenter& segmenter) {
  ASSIGN_OR_RETURN(std::vector<Instance> found, segmenter.SegmentText(query));
  return BestInstanceMask(found, width, height);
}

core::StatusOr<Mask> NaiveCoupling(const std::string& query, int width, int height,
                                   TracedSegmenter& segmenter, TracedReasoner& reasoner,
                                   CallTrace* trace) {
  ASSIGN_OR_RETURN(std::optional<Box> box, reasoner.Ground(query));
  if (!box) return Mask(width, height);
  const Box clipped = ClipBox(*box, width, height);
  if (clipped.empty()) {
    TraceDecision(trace, "eri", "box_outside", "naive coupling", FormatBox(*box));
    return Mask(width, height);
  }
  ASSIGN_OR_RETURN(std::vector<Instance> found, segmenter.SegmentBox(clipped));
  return BestInstanceMask(found, width, height);
}

}  // namespace tessera::tarot
