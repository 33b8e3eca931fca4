#include "tarot/msr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/rng.h"

namespace tessera::tarot {

core::Status ValidateMsrOptions(const MsrOptions& o) {
  auto bad = [](const char* field, double v, const char* allowed) {
    return core::InvalidArgument(fmt::format("msr.{}: got {}, must be {}", field, v, allowed));
  };
  if (o.rounds < 0) return bad("rounds", o.rounds, ">= 0 (e.g. 2)");
  if (!(o.area_fraction >= 0 && o.area_fraction <= 1)) {
    return bad("area_fraction", o.area_fraction, "in [0, 1] (e.g. 0.01)");
  }
  if (!(o.simi_thresh >= -1 && o.simi_thresh <= 1)) {
    return bad("simi_thresh", o.simi_thresh, "in [-1, 1] (e.g. 0.5)");
  }
  if (!(o.negative_similarity >= -1 && o.negative_similarity <= 1)) {
    return bad("negative_similarity", o.negative_similarity, "in [-1, 1] (e.g. 0.3)");
  }
  if (o.sample_points < 1) return bad("sample_points", o.sample_points, ">= 1 (e.g. 5)");
  if (o.positive_points < 1) return bad("positive_points", o.positive_points, ">= 1 (e.g. 3)");
  if (!(o.peak_separation >= 0)) return bad("peak_separation", o.peak_separation, ">= 0");
  return core::Status::Ok();
}

const char* AreaOfName(AreaOf a) { return a == AreaOf::kImage ? "image" : "mask"; }

core::StatusOr<AreaOf> ParseAreaOf(const std::string& name) {
  if (name == "image") return AreaOf::kImage;
  if (name == "mask") return AreaOf::kMask;
  return core::InvalidArgument(fmt::format("msr.area_of: got '{}', must be image or mask", name));
}

const char* MsrBranchName(MsrBranch b) {
  switch (b) {
    case MsrBranch::kEmpty:
      return "empty";
    case MsrBranch::kKeep:
      return "keep";
    case MsrBranch::kUnder:
      return "under";
    case MsrBranch::kOver:
      return "over";
  }
  return "?";
}

namespace {

Point PixelCentre(size_t index, int width, bool positive) {
  return Point{static_cast<double>(index % width) + 0.5, static_cast<double>(index / width) + 0.5,
               positive};
}

std::vector<size_t> SetPixels(const Mask& m) {
  std::vector<size_t> out;
  for (int y = 0; y < m.height(); ++y) {
    for (int x = 0; x < m.width(); ++x) {
      if (m.get(x, y)) out.push_back(static_cast<size_t>(y) * m.width() + x);
    }
  }
  return out;
}

// Minimum of `map` over the set pixels of `m` (non-empty).
double MinOver(const std::vector<float>& map, const Mask& m) {
  double lo = std::numeric_limits<double>::infinity();
  for (size_t i : SetPixels(m)) lo = std::min(lo, static_cast<double>(map[i]));
  return lo;
}

Mask Above(const std::vector<float>& map, double t, int width, int height) {
  Mask out(width, height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      if (map[static_cast<size_t>(y) * width + x] > t) out.set(x, y);
    }
  }
  return out;
}

}  // namespace

core::StatusOr<PointPrompt> MakePointPrompt(const Mask& m, const Box& box, const PatchGrid& grid,
                                            TracedSegmenter& segmenter, const MsrOptions& o,
                                            CallTrace* trace) {
  const int w = m.width(), h = m.height();
  PointPrompt p;
  p.mask = Mask(w, h);
  // Sample pixels of M without replacement (partial Fisher-Yates).
  std::vector<size_t> pix = SetPixels(m);
  if (pix.empty()) return p;
  core::Rng rng(o.seed);
  const size_t k = std::min(pix.size(), static_cast<size_t>(o.sample_points));
  for (size_t i = 0; i < k; ++i) {
    std::swap(pix[i], pix[i + rng.Below(pix.size() - i)]);
    p.samples.push_back(PixelCentre(pix[i], w, true));
  }
  const std::vector<float> s = TracedSimilarityMap(grid, p.samples, o.combine, w, h, trace);

  // Positive points: peaks inside the box, separated.
  const Box b = box.empty() ? BoxOf(m) : box;
  std::vector<size_t> inside = SetPixels(BoxMask(w, h, b));
  std::stable_sort(inside.begin(), inside.end(), [&](size_t a, size_t c) { return s[a] > s[c]; });
  const double sep = o.peak_separation * std::min(b.x1 - b.x0, b.y1 - b.y0);
  for (size_t i : inside) {
    if (static_cast<int>(p.points.size()) >= o.positive_points) break;
    const Point cand = PixelCentre(i, w, true);
    const bool far = std::all_of(p.points.begin(), p.points.end(), [&](const Point& q) {
      return std::hypot(q.x - cand.x, q.y - cand.y) >= sep;
    });
    if (far) p.points.push_back(cand);
  }
  // One negative point: nearest pixel to the first positive with S < negative_similarity.
  if (!p.points.empty()) {
    const Point first = p.points[0];
    size_t neg = 0;
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < s.size(); ++i) {
      if (!(s[i] < o.negative_similarity)) continue;
      const Point c = PixelCentre(i, w, false);
      const double d = (c.x - first.x) * (c.x - first.x) + (c.y - first.y) * (c.y - first.y);
      if (d < best) {
        best = d;
        neg = i;
      }
    }
    if (best < std::numeric_limits<double>::infinity()) {
      p.points.push_back(PixelCentre(neg, w, false));
    }
  }
  TraceDecision(trace, "msr", "point_prompt", "samples " + FormatPoints(p.samples),
                "points " + FormatPoints(p.points));
  if (p.points.empty()) return p;
  ASSIGN_OR_RETURN(std::vector<Instance> found, segmenter.SegmentPoints(p.points, std::nullopt));
  p.mask = BestInstanceMask(found, w, h);
  return p;
}

core::StatusOr<MsrStep> RefineStep(const Mask& m, const Mask& q, const PatchGrid& grid,
                                   const std::string& query, TracedReasoner& reasoner,
                                   const MsrOptions& o, CallTrace* trace) {
  const int w = m.width(), h = m.height();
  MsrStep step;
  const Mask inter = m & q;
  if (inter.none()) {
    step.branch = MsrBranch::kEmpty;
    step.why = "M and Q disjoint";
    return step;
  }
  const Mask dm = m.Minus(q), dq = q.Minus(m);
  step.dm_area = dm.count();
  step.dq_area = dq.count();
  step.dm_largest = LargestComponent(dm).count();
  step.dq_largest = LargestComponent(dq).count();
  const double reference_px = o.area_of == AreaOf::kImage
                                  ? static_cast<double>(w) * static_cast<double>(h)
                                  : static_cast<double>(m.count());
  const double area_px = o.area_fraction * reference_px;
  if (static_cast<double>(step.dm_largest) <= area_px &&
      static_cast<double>(step.dq_largest) <= area_px) {
    step.why = "small regions";
    return step;
  }
  // Under-segmentation: does Q's extra region belong to the target?
  if (step.dq_area > 0) {
    const std::vector<float> sq =
        TracedSimilarityMap(grid, {CentroidOf(dq)}, o.combine, w, h, trace);
    const Mask p = dq | (Above(sq, MinOver(sq, dq), w, h) & m);
    step.region = p;
    ASSIGN_OR_RETURN(const bool belongs, reasoner.JudgeRegion(query, m, p));
    if (belongs) {
      step.branch = MsrBranch::kUnder;
      step.why = "Q's region judged part";
      step.point = CentroidOf(p, /*positive=*/true);
      return step;
    }
  }
  // Over-segmentation: is M's extra region not part of the target?
  if (step.dm_area > 0) {
    const std::vector<float> sm =
        TracedSimilarityMap(grid, {CentroidOf(dm)}, o.combine, w, h, trace);
    const double t = std::max(MinOver(sm, dm), o.simi_thresh);
    const Mask p = inter.Not() & Above(sm, t, w, h);
    step.region = p;
    if (p.none()) {
      step.why = "over region empty";
      return step;
    }
    ASSIGN_OR_RETURN(const bool belongs, reasoner.JudgeRegion(query, m, p));
    if (!belongs) {
      step.branch = MsrBranch::kOver;
      step.why = "M's region judged not part";
      step.point = CentroidOf(p, /*positive=*/false);
      return step;
    }
  }
  step.why = "judged consistent";
  return step;
}

core::StatusOr<MsrResult> RunMsr(const Mask& m, const Box& box, const std::string& query,
                                 const PatchGrid& grid, TracedSegmenter& segmenter,
                                 TracedReasoner& reasoner, const MsrOptions& o, CallTrace* trace) {
  RETURN_IF_ERROR(ValidateMsrOptions(o));
  MsrResult r;
  r.mask = m;
  if (m.none() || o.rounds == 0) {
    TraceDecision(trace, "msr", "skip", FormatMask(m), m.none() ? "empty M" : "0 rounds");
    return r;
  }
  ASSIGN_OR_RETURN(r.prompt, MakePointPrompt(m, box, grid, segmenter, o, trace));
  if (r.prompt.mask.none()) {
    TraceDecision(trace, "msr", "skip", FormatMask(m), "empty Q");
    return r;
  }
  r.points = r.prompt.points;
  for (int round = 0; round < o.rounds; ++round) {
    ASSIGN_OR_RETURN(MsrStep step,
                     RefineStep(r.mask, r.prompt.mask, grid, query, reasoner, o, trace));
    TraceDecision(trace, "msr", fmt::format("round {}", round + 1),
                  fmt::format("M {} Q {} |D_M| {} ({}) |D_Q| {} ({})", FormatMask(r.mask),
                              FormatMask(r.prompt.mask), step.dm_area, step.dm_largest,
                              step.dq_area, step.dq_largest),
                  fmt::format("{}: {}{}", MsrBranchName(step.branch), step.why,
                              step.point ? " point " + FormatPoint(*step.point) : ""));
    const MsrBranch branch = step.branch;
    std::optional<Point> point = step.point;
    r.steps.push_back(std::move(step));
    if (branch == MsrBranch::kEmpty) {
      r.mask = Mask(m.width(), m.height());
      break;
    }
    if (!point) break;
    r.points.push_back(*point);
    ASSIGN_OR_RETURN(std::vector<Instance> found, segmenter.SegmentPoints(r.points, std::nullopt));
    r.mask = BestInstanceMask(found, m.width(), m.height());
  }
  if (o.accept_by_compare && r.mask != m) {
    ASSIGN_OR_RETURN(const int pick, reasoner.Compare(query, m, r.mask));
    r.reverted = pick == 0;
    TraceDecision(trace, "msr", "accept", FormatMask(r.mask),
                  r.reverted ? "kept the ERI mask (compared)" : "refined mask (compared)");
    if (r.reverted) r.mask = m;
  }
  return r;
}

}  // namespace tessera::tarot
