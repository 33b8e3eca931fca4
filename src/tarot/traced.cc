#include "tarot/traced.h"

#include <fmt/format.h>

#include <chrono>
#include <utility>

#include "core/elapsed.h"

namespace tessera::tarot {

std::string FormatBox(const Box& b) {
  return fmt::format("[{:.1f},{:.1f},{:.1f},{:.1f}]", b.x0, b.y0, b.x1, b.y1);
}

std::string FormatMask(const Mask& m) {
  return fmt::format("area {} box {}", m.count(), FormatBox(BoxOf(m)));
}

std::string FormatPoint(const Point& p) {
  return fmt::format("({:.1f},{:.1f}){}", p.x, p.y, p.positive ? '+' : '-');
}

std::string FormatScore(double s) { return fmt::format("{:.3f}", s); }

std::string FormatPoints(const std::vector<Point>& pts) {
  std::string out;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (i > 0) out += ' ';
    out += FormatPoint(pts[i]);
  }
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

std::string FormatInstances(const std::vector<Instance>& v) {
  std::string out = fmt::format("{} instance{}", v.size(), v.size() == 1 ? "" : "s");
  for (size_t i = 0; i < v.size(); ++i) {
    out += fmt::format("{}{} {}", i == 0 ? ": " : "; ", FormatScore(v[i].score),
                       FormatMask(v[i].mask));
  }
  return out;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string FormatList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ", ";
    out += Quote(v[i]);
  }
  return out + "]";
}

// Records one call: the output text when ok, else "error: <status>".
template <typename T, typename Show>
void Record(CallTrace* trace, const char* component, const char* method, std::string input,
            const core::StatusOr<T>& r, Show show, Clock::time_point t0) {
  if (trace == nullptr) return;
  trace->Add(component, method, std::move(input),
             r.ok() ? show(*r) : "error: " + r.status().ToString(), core::MillisecondsSince(t0));
}

void RecordStatus(CallTrace* trace, const char* component, const char* method, std::string input,
                  const core::Status& st, Clock::time_point t0) {
  if (trace == nullptr) return;
  trace->Add(component, method, std::move(input), st.ok() ? "ok" : "error: " + st.ToString(),
             core::MillisecondsSince(t0));
}

}  // namespace

core::Status TracedSegmenter::SetImage(const Image& image) {
  const auto t0 = Clock::now();
  core::Status st = s_.SetImage(image);
  RecordStatus(trace_, "segmenter", "SetImage", fmt::format("{}x{}", image.width, image.height), st,
               t0);
  if (st.ok()) {
    width_ = image.width;
    height_ = image.height;
  }
  return st;
}

core::StatusOr<std::vector<Instance>> TracedSegmenter::Checked(
    core::StatusOr<std::vector<Instance>> r) const {
  if (!r.ok()) return r;
  for (const Instance& inst : *r) {
    if (inst.mask.width() != width_ || inst.mask.height() != height_) {
      return core::Internal(fmt::format(
          "segmenter '{}': returned a {}x{} instance mask for a {}x{} image (must match)",
          s_.name(), inst.mask.width(), inst.mask.height(), width_, height_));
    }
  }
  return r;
}

core::StatusOr<std::vector<Instance>> TracedSegmenter::SegmentText(const std::string& phrase) {
  const auto t0 = Clock::now();
  auto r = Checked(s_.SegmentText(phrase));
  Record(trace_, "segmenter", "Text", Quote(phrase), r, FormatInstances, t0);
  return r;
}

core::StatusOr<std::vector<Instance>> TracedSegmenter::SegmentBox(const Box& box) {
  const auto t0 = Clock::now();
  auto r = Checked(s_.SegmentBox(box));
  Record(trace_, "segmenter", "Box", FormatBox(box), r, FormatInstances, t0);
  return r;
}

core::StatusOr<std::vector<Instance>> TracedSegmenter::SegmentPoints(
    const std::vector<Point>& points, std::optional<Box> within) {
  const auto t0 = Clock::now();
  auto r = Checked(s_.SegmentPoints(points, within));
  Record(trace_, "segmenter", "Points",
         FormatPoints(points) + (within ? " within " + FormatBox(*within) : ""), r, FormatInstances,
         t0);
  return r;
}

core::Status TracedReasoner::SetImage(const Image& image) {
  const auto t0 = Clock::now();
  core::Status st = r_.SetImage(image);
  RecordStatus(trace_, "reasoner", "SetImage", fmt::format("{}x{}", image.width, image.height), st,
               t0);
  return st;
}

core::StatusOr<ParsedQuery> TracedReasoner::Parse(const std::string& query) {
  const auto t0 = Clock::now();
  auto r = r_.Parse(query);
  Record(
      trace_, "reasoner", "Parse", Quote(query), r,
      [](const ParsedQuery& p) {
        if (!p.ok) return std::string("unparsed");
        return fmt::format("target {} scope {} refs {} attrs {} relation {} ordinal {} {}",
                           Quote(p.target_name), ScopeName(p.scope), FormatList(p.refer_objects),
                           FormatList(p.attributes), Quote(p.relation), p.ordinal,
                           Quote(p.ordinal_axis));
      },
      t0);
  return r;
}

core::StatusOr<std::string> TracedReasoner::Describe(const std::string& query,
                                                     const ParsedQuery& parsed,
                                                     const DescribeContext& context) {
  const auto t0 = Clock::now();
  auto r = r_.Describe(query, parsed, context);
  std::string in = Quote(query);
  for (const auto& ref : context.references) {
    in += fmt::format(" ref {} x{}", Quote(ref.name), ref.masks.size());
  }
  for (size_t i = 0; i < context.ordinal_masks.size(); ++i) {
    in += fmt::format(" rank {} {}", context.ordinal_ranks[i],
                      FormatBox(BoxOf(context.ordinal_masks[i])));
  }
  Record(trace_, "reasoner", "Describe", std::move(in), r, Quote, t0);
  return r;
}

core::StatusOr<Variants> TracedReasoner::MakeVariants(const std::string& description) {
  const auto t0 = Clock::now();
  auto r = r_.MakeVariants(description);
  Record(
      trace_, "reasoner", "Variants", Quote(description), r,
      [](const Variants& v) {
        return "short " + Quote(v.short_text) + " long " + Quote(v.long_text);
      },
      t0);
  return r;
}

core::StatusOr<std::vector<std::string>> TracedReasoner::NounPhrases(const std::string& description,
                                                                     int n) {
  const auto t0 = Clock::now();
  auto r = r_.NounPhrases(description, n);
  Record(trace_, "reasoner", "NounPhrases", fmt::format("{} n {}", Quote(description), n), r,
         FormatList, t0);
  return r;
}

core::StatusOr<std::optional<std::string>> TracedReasoner::Rephrase(
    const std::string& phrase, const std::vector<std::string>& tried) {
  const auto t0 = Clock::now();
  auto r = r_.Rephrase(phrase, tried);
  Record(
      trace_, "reasoner", "Rephrase", Quote(phrase) + " tried " + FormatList(tried), r,
      [](const std::optional<std::string>& s) { return s ? Quote(*s) : "none"; }, t0);
  return r;
}

core::StatusOr<std::optional<Box>> TracedReasoner::Ground(const std::string& expression) {
  const auto t0 = Clock::now();
  auto r = r_.Ground(expression);
  Record(
      trace_, "reasoner", "Ground", Quote(expression), r,
      [](const std::optional<Box>& b) { return b ? FormatBox(*b) : "none"; }, t0);
  return r;
}

core::StatusOr<bool> TracedReasoner::JudgeRegion(const std::string& query, const Mask& kept,
                                                 const Mask& region) {
  const auto t0 = Clock::now();
  auto r = r_.JudgeRegion(query, kept, region);
  Record(
      trace_, "reasoner", "JudgeRegion",
      fmt::format("{} kept {} region {}", Quote(query), FormatMask(kept), FormatMask(region)), r,
      [](bool b) { return std::string(b ? "yes" : "no"); }, t0);
  return r;
}

core::StatusOr<bool> TracedReasoner::Check(const std::string& query, const Mask& mask) {
  const auto t0 = Clock::now();
  auto r = r_.Check(query, mask);
  Record(
      trace_, "reasoner", "Check", fmt::format("{} {}", Quote(query), FormatMask(mask)), r,
      [](bool b) { return std::string(b ? "yes" : "no"); }, t0);
  return r;
}

core::StatusOr<int> TracedReasoner::Compare(const std::string& query, const Mask& a,
                                            const Mask& b) {
  const auto t0 = Clock::now();
  core::StatusOr<int> r = r_.Compare(query, a, b);
  if (r.ok() && *r != 0 && *r != 1) {
    r = core::Internal(
        fmt::format("reasoner '{}': Compare returned {}, must be 0 (a) or 1 (b)", r_.name(), *r));
  }
  Record(
      trace_, "reasoner", "Compare",
      fmt::format("{} a {} b {}", Quote(query), FormatMask(a), FormatMask(b)), r,
      [](int w) { return std::string(w == 0 ? "a" : "b"); }, t0);
  return r;
}

std::vector<float> TracedSimilarityMap(const PatchGrid& grid, const std::vector<Point>& points,
                                       Combine combine, int width, int height, CallTrace* trace) {
  const auto t0 = Clock::now();
  std::vector<float> map = SimilarityMap(grid, points, combine, width, height);
  if (trace != nullptr) {
    trace->Add("features", "SimilarityMap",
               FormatPoints(points) + (combine == Combine::kHarmonic ? " harmonic" : " mean"),
               fmt::format("{}x{}", width, height), core::MillisecondsSince(t0));
  }
  return map;
}

void TraceDecision(CallTrace* trace, const std::string& component, const std::string& what,
                   const std::string& input, const std::string& output) {
  if (trace != nullptr) trace->Add(component, what, input, output);
}

}  // namespace tessera::tarot
