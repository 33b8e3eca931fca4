// Traced backends: thin wrappers that forward each call to a Segmenter, Reasoner or feature
// similarity map and record it in a CallTrace (component, method, a short deterministic text of
// the input and output, wall time in ms). ERI, MSR and the pipeline call the backends only
// through these, so every backend call of a query appears in its trace in call order.
// The wrappers also check what a segmenter returns: an instance mask whose size differs from
// the image set with SetImage is an Internal error naming the backend (a broken backend must
// not reach the mask set operations, which CHECK equal sizes).
// Text formats (stable; golden traces compare them): a box "[x0,y0,x1,y1]" to 0.1 px, a mask
// "area N box [..]", a score to 3 decimals, a point "(x,y)+" or "(x,y)-" to 0.1 px.
// Ownership: the wrappers borrow the backends and the trace (which may be null: no record).
// Thread-safety: as the wrapped backend; one query at a time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/call_trace.h"
#include "tarot/features.h"
#include "tarot/reasoner.h"
#include "tarot/segmenter.h"
#include "tarot/types.h"

namespace tessera::tarot {

std::string FormatBox(const Box& b);
std::string FormatMask(const Mask& m);
std::string FormatPoint(const Point& p);
std::string FormatScore(double s);
std::string FormatPoints(const std::vector<Point>& pts);  // space-separated

class TracedSegmenter {
 public:
  // `width` x `height`: the image already set on the segmenter (0 x 0 if none yet; SetImage
  // through the wrapper updates it).
  TracedSegmenter(Segmenter& segmenter, int width, int height, CallTrace* trace)
      : s_(segmenter), trace_(trace), width_(width), height_(height) {}
  core::Status SetImage(const Image& image);
  core::StatusOr<std::vector<Instance>> SegmentText(const std::string& phrase);
  core::StatusOr<std::vector<Instance>> SegmentBox(const Box& box);
  core::StatusOr<std::vector<Instance>> SegmentPoints(const std::vector<Point>& points,
                                                      std::optional<Box> within);

 private:
  core::StatusOr<std::vector<Instance>> Checked(core::StatusOr<std::vector<Instance>> r) const;
  Segmenter& s_;
  CallTrace* trace_;
  int width_ = 0, height_ = 0;
};

class TracedReasoner {
 public:
  TracedReasoner(Reasoner& reasoner, CallTrace* trace) : r_(reasoner), trace_(trace) {}
  core::Status SetImage(const Image& image);
  core::StatusOr<ParsedQuery> Parse(const std::string& query);
  core::StatusOr<std::string> Describe(const std::string& query, const ParsedQuery& parsed,
                                       const DescribeContext& context);
  core::StatusOr<Variants> MakeVariants(const std::string& description);
  core::StatusOr<std::vector<std::string>> NounPhrases(const std::string& description, int n);
  core::StatusOr<std::optional<std::string>> Rephrase(const std::string& phrase,
                                                      const std::vector<std::string>& tried);
  core::StatusOr<std::optional<Box>> Ground(const std::string& expression);
  core::StatusOr<bool> JudgeRegion(const std::string& query, const Mask& kept, const Mask& region);
  core::StatusOr<bool> Check(const std::string& query, const Mask& mask);
  core::StatusOr<int> Compare(const std::string& query, const Mask& a, const Mask& b);

 private:
  Reasoner& r_;
  CallTrace* trace_;
};

// SimilarityMap (features.h) recorded as a "features" call: the DINO cosine-similarity
// extraction of the authors' code.
std::vector<float> TracedSimilarityMap(const PatchGrid& grid, const std::vector<Point>& points,
                                       Combine combine, int width, int height, CallTrace* trace);

// A decision of the algorithm (not a backend call), recorded under `component` ("eri", "msr").
void TraceDecision(CallTrace* trace, const std::string& component, const std::string& what,
                   const std::string& input, const std::string& output);

}  // namespace tessera::tarot
