// The naive systems the spec's benchmark compares ERI against:
//   NaiveText      the query straight to SegmentText, the best-score instance (SAM3 alone);
//   NaiveCoupling  Reasoner::Ground(query) -> box (clipped to the image) -> SegmentBox, the
//                  best-score instance (the MLLM -> SAM3 coupling the paper criticises: the
//                  result is bound to the MLLM's box and never refined).
// Either gives an empty mask when its backend finds nothing. Best score ties: the earlier
// instance. Backend errors are returned as is.
// Thread-safety: one query at a time over the given backends.
#pragma once

#include <string>

#include "core/status.h"
#include "tarot/call_trace.h"
#include "tarot/traced.h"
#include "tarot/types.h"

namespace tessera::tarot {

core::StatusOr<Mask> NaiveText(const std::string& query, int width, int height,
                               TracedSegmenter& segmenter);
core::StatusOr<Mask> NaiveCoupling(const std::string& query, int width, int height,
                                   TracedSegmenter& segmenter, TracedReasoner& reasoner,
                                   CallTrace* trace);

}  // namespace tessera::tarot
