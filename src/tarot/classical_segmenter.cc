#include "tarot/classical_segmenter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "tarot/fmnist_detect.h"
#include "tarot/query_parser.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr const char* kWho = "segmenter 'classical'";
constexpr size_t kMaxPhraseChars = 100;  // the authors' code truncates SAM3 text prompts
constexpr double kRunnerUpFactor = 0.8;  // score factor of a runner-up category match
constexpr double kSizeMismatchFactor = 0.5;
constexpr double kHalfInside = 0.5;
constexpr int kSeedDiscRadius = 2;
constexpr int kMinMarginPx = 4;
constexpr uint64_t kGrabCutSeed = 0x7a407;

double BoxScore(const Mask& m, const Box& prompt) { return 0.5 + 0.49 * BoxIou(BoxOf(m), prompt); }

int64_t FirstPixel(const Mask& m) {
  for (int y = 0; y < m.height(); ++y)
    for (int x = 0; x < m.width(); ++x)
      if (m.get(x, y)) return static_cast<int64_t>(y) * m.width() + x;
  return -1;
}

// Sorted by score, descending; ties by first pixel in row-major order; equal masks once.
std::vector<Instance> Finish(std::vector<Instance> in) {
  std::vector<std::pair<int64_t, Instance>> keyed;
  for (Instance& i : in) {
    if (i.mask.none()) continue;
    bool dup = false;
    for (auto& [k, j] : keyed) {
      if (j.mask == i.mask) {
        j.score = std::max(j.score, i.score);
        dup = true;
      }
    }
    if (!dup) keyed.emplace_back(FirstPixel(i.mask), std::move(i));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (a.second.score != b.second.score) return a.second.score > b.second.score;
    return a.first < b.first;
  });
  std::vector<Instance> out;
  for (auto& [k, i] : keyed) {
    i.box = BoxOf(i.mask);
    out.push_back(std::move(i));
  }
  return out;
}

// Integer pixel bounds [x0, x1) x [y0, y1) of `b` grown by `margin` x its size per side (at
// least kMinMarginPx), clipped to the image.
cv::Rect Grown(const Box& b, double margin, int width, int height) {
  const double mx = std::max<double>(kMinMarginPx, margin * (b.x1 - b.x0));
  const double my = std::max<double>(kMinMarginPx, margin * (b.y1 - b.y0));
  const int x0 = std::max(0, static_cast<int>(std::floor(b.x0 - mx)));
  const int y0 = std::max(0, static_cast<int>(std::floor(b.y0 - my)));
  const int x1 = std::min(width, static_cast<int>(std::ceil(b.x1 + mx)));
  const int y1 = std::min(height, static_cast<int>(std::ceil(b.y1 + my)));
  return {x0, y0, std::max(0, x1 - x0), std::max(0, y1 - y0)};
}

cv::Mat Crop(const Image& image, const cv::Rect& roi) {
  cv::Mat m(roi.height, roi.width, CV_8UC3);
  for (int y = 0; y < roi.height; ++y) {
    for (int x = 0; x < roi.width; ++x) {
      const Rgb p = image.at(roi.x + x, roi.y + y);
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(p.b, p.g, p.r);
    }
  }
  return m;
}

// Runs GrabCut on the crop; false when OpenCV refuses (e.g. no background sample).
bool RunGrabCut(const cv::Mat& crop, cv::Mat& gc_mask, const cv::Rect& rect, int mode,
                int iterations) {
  cv::Mat bgd, fgd;
  try {
    cv::setRNGSeed(static_cast<int>(kGrabCutSeed));
    cv::grabCut(crop, gc_mask, rect, bgd, fgd, iterations, mode);
  } catch (const cv::Exception&) {
    return false;
  }
  return true;
}

// The foreground of a GrabCut mask on `roi` as a full-size mask.
Mask Foreground(const cv::Mat& gc_mask, const cv::Rect& roi, int width, int height) {
  Mask m(width, height);
  for (int y = 0; y < roi.height; ++y) {
    for (int x = 0; x < roi.width; ++x) {
      const uint8_t v = gc_mask.at<uint8_t>(y, x);
      if (v == cv::GC_FGD || v == cv::GC_PR_FGD) m.set(roi.x + x, roi.y + y);
    }
  }
  return m;
}

// The 4-connected component of `m` holding pixel (x, y) (empty if it is not set).
Mask ComponentAt(const Mask& m, int x, int y) {
  Mask out(m.width(), m.height());
  if (!m.get(x, y)) return out;
  std::vector<std::pair<int, int>> stack = {{x, y}};
  out.set(x, y);
  while (!stack.empty()) {
    const auto [cx, cy] = stack.back();
    stack.pop_back();
    const int nb[4][2] = {{cx - 1, cy}, {cx + 1, cy}, {cx, cy - 1}, {cx, cy + 1}};
    for (const auto& n : nb) {
      if (n[0] < 0 || n[1] < 0 || n[0] >= m.width() || n[1] >= m.height()) continue;
      if (!m.get(n[0], n[1]) || out.get(n[0], n[1])) continue;
      out.set(n[0], n[1]);
      stack.push_back({n[0], n[1]});
    }
  }
  return out;
}

std::string BoxKey(const Box& b) {
  return fmt::format("{:.3f},{:.3f},{:.3f},{:.3f}", b.x0, b.y0, b.x1, b.y1);
}

}  // namespace

core::StatusOr<ClassicalSegmenterOptions> ParseClassicalSegmenterOptions(
    const core::RegistryOptions& options) {
  ClassicalSegmenterOptions o;
  auto integer = [&](const std::string& key, int fallback, int lo, int hi) -> core::StatusOr<int> {
    ASSIGN_OR_RETURN(const double v, OptionNumber(options, kWho, key, fallback, lo, hi));
    if (v != std::floor(v)) {
      return core::InvalidArgument(
          fmt::format("{}: {}: got '{}', must be an integer", kWho, key, options.at(key)));
    }
    return static_cast<int>(v);
  };
  ASSIGN_OR_RETURN(o.iterations, integer("classical.iterations", o.iterations, 1, 10));
  ASSIGN_OR_RETURN(o.min_area, integer("classical.min_area", o.min_area, 1, 10000));
  ASSIGN_OR_RETURN(o.margin, OptionNumber(options, kWho, "classical.margin", o.margin, 0, 2));
  ASSIGN_OR_RETURN(o.runner_up_margin, OptionNumber(options, kWho, "classical.runner_up_margin",
                                                    o.runner_up_margin, 0, 1));
  return o;
}

ClassicalSegmenter::ClassicalSegmenter(ClassicalSegmenterOptions options) : options_(options) {}

core::Status ClassicalSegmenter::SetImage(const Image& image) {
  if (image.empty()) {
    image_set_ = false;
    return core::FailedPrecondition(fmt::format("{}: got an empty {}x{} image, need at least 1x1",
                                                kWho, image.width, image.height));
  }
  if (image_set_ && image.width == image_.width && image.height == image_.height &&
      image.pixels == image_.pixels) {
    return core::Status::Ok();  // the same image: keep the analysis and the cache
  }
  image_ = image;
  image_set_ = false;
  if (options_.set == kSetFmnist) {
    ASSIGN_OR_RETURN(analysis_, AnalyseFmnistImage(image_, options_.min_area));
  } else {
    analysis_ = AnalyseImage(image_, options_.min_area);
  }
  cache_.clear();
  image_set_ = true;
  return core::Status::Ok();
}

core::Status ClassicalSegmenter::Ready() const {
  if (!image_set_) return core::FailedPrecondition(std::string(kWho) + ": no image set");
  return core::Status::Ok();
}

core::StatusOr<std::vector<Instance>> ClassicalSegmenter::SegmentText(const std::string& phrase) {
  RETURN_IF_ERROR(Ready());
  const std::string cut = phrase.substr(0, kMaxPhraseChars);
  const ParseResult parsed = ParseQuery(cut, ParseOptions{.facts = false});
  if (!parsed.ok) return std::vector<Instance>{};
  const ObjectSpec& spec = parsed.program.target;
  const std::string& part = parsed.program.part;
  const int colour = spec.colour.empty() ? -1 : ColourIndex(spec.colour);
  const int size = spec.size.empty() ? -1 : SizeIndex(spec.size);
  std::vector<Instance> out;
  for (const ClassicalObject& o : analysis_.objects) {
    double factor = 0;
    double confidence = o.confidence;
    if (CategoryCovers(spec.category, Categories()[o.category].name)) {
      factor = 1;
    } else if (o.runner_up >= 0 && o.runner_up_distance - o.distance <= options_.runner_up_margin &&
               CategoryCovers(spec.category, Categories()[o.runner_up].name)) {
      factor = kRunnerUpFactor;
      confidence = Confidence(o.runner_up_distance);
    }
    if (factor == 0) continue;
    if (colour >= 0 && o.colour != colour) continue;
    if (size >= 0 && o.size != size) factor *= kSizeMismatchFactor;
    Mask m = o.PartMask(part);
    if (m.none()) continue;
    out.push_back({std::move(m), factor * (0.5 + 0.49 * confidence), {}});
  }
  return Finish(std::move(out));
}

core::StatusOr<std::vector<Instance>> ClassicalSegmenter::SegmentBox(const Box& box) {
  RETURN_IF_ERROR(Ready());
  if (ClipBox(box, image_.width, image_.height).empty()) {
    return core::InvalidArgument(fmt::format(
        "{}: box [{:.1f}, {:.1f}, {:.1f}, {:.1f}] misses the {}x{} image (x0 < x1, y0 < y1, "
        "inside [0, width] x [0, height])",
        kWho, box.x0, box.y0, box.x1, box.y1, image_.width, image_.height));
  }
  const std::string key = "box " + BoxKey(box);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::vector<Instance> out = BoxUncached(ClipBox(box, image_.width, image_.height));
  cache_[key] = out;
  return out;
}

std::vector<Instance> ClassicalSegmenter::BoxUncached(const Box& box) const {
  const int w = image_.width, h = image_.height;
  std::vector<Instance> out;
  const cv::Rect roi = Grown(box, options_.margin, w, h);
  cv::Rect rect(std::max(0, static_cast<int>(std::floor(box.x0))) - roi.x,
                std::max(0, static_cast<int>(std::floor(box.y0))) - roi.y, 0, 0);
  rect.width = std::min(w, static_cast<int>(std::ceil(box.x1))) - roi.x - rect.x;
  rect.height = std::min(h, static_cast<int>(std::ceil(box.y1))) - roi.y - rect.y;
  // GrabCut needs background samples outside the rectangle: a box over the whole image loses
  // its outer pixel ring.
  if (rect.x == 0 && rect.y == 0 && rect.width == roi.width && rect.height == roi.height &&
      rect.width > 2 && rect.height > 2) {
    rect = cv::Rect(1, 1, rect.width - 2, rect.height - 2);
  }
  cv::Mat gc_mask(roi.height, roi.width, CV_8U, cv::Scalar(cv::GC_BGD));
  if (rect.width > 0 && rect.height > 0 &&
      RunGrabCut(Crop(image_, roi), gc_mask, rect, cv::GC_INIT_WITH_RECT, options_.iterations)) {
    const Mask fg = Foreground(gc_mask, roi, w, h);
    Mask largest = LargestComponent(fg);
    if (!largest.none()) out.push_back({largest, BoxScore(largest, box), {}});
  }
  const Mask inside = BoxMask(w, h, box);
  auto consider = [&](const Mask& m) {
    const int64_t area = m.count();
    if (area > 0 && m.IntersectionCount(inside) >= kHalfInside * static_cast<double>(area)) {
      out.push_back({m, BoxScore(m, box), {}});
    }
  };
  for (const ClassicalObject& o : analysis_.objects) {
    consider(o.mask);
    for (const Mask& p : o.parts) consider(p);
  }
  return Finish(std::move(out));
}

core::StatusOr<std::vector<Instance>> ClassicalSegmenter::SegmentPoints(
    const std::vector<Point>& points, std::optional<Box> within) {
  RETURN_IF_ERROR(Ready());
  if (points.empty()) {
    return core::InvalidArgument(std::string(kWho) + ": got no points, need at least one");
  }
  std::string key = "points";
  for (const Point& p : points) {
    if (!(p.x >= 0 && p.x < image_.width && p.y >= 0 && p.y < image_.height)) {
      return core::InvalidArgument(
          fmt::format("{}: point ({:.1f}, {:.1f}) lies outside the {}x{} image", kWho, p.x, p.y,
                      image_.width, image_.height));
    }
    key += fmt::format(" {}{:.3f},{:.3f}", p.positive ? '+' : '-', p.x, p.y);
  }
  if (within.has_value()) {
    if (ClipBox(*within, image_.width, image_.height).empty()) {
      return core::InvalidArgument(
          fmt::format("{}: box [{:.1f}, {:.1f}, {:.1f}, {:.1f}] misses the {}x{} image", kWho,
                      within->x0, within->y0, within->x1, within->y1, image_.width, image_.height));
    }
    within = ClipBox(*within, image_.width, image_.height);
    key += " within " + BoxKey(*within);
  }
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::vector<Instance> out = PointsUncached(points, within);
  cache_[key] = out;
  return out;
}

std::vector<Instance> ClassicalSegmenter::PointsUncached(const std::vector<Point>& points,
                                                         std::optional<Box> within) const {
  const int w = image_.width, h = image_.height;
  auto region_at = [&](const Point& p) -> const Mask* {
    const int x = static_cast<int>(p.x), y = static_cast<int>(p.y);
    for (const Mask& r : analysis_.regions)
      if (r.get(x, y)) return &r;
    return nullptr;
  };
  std::vector<Point> positives, negatives;
  for (const Point& p : points) (p.positive ? positives : negatives).push_back(p);
  if (positives.empty()) return {};
  Mask seed(w, h);
  for (const Point& p : positives) {
    if (const Mask* r = region_at(p)) seed = seed | *r;
    seed.set(static_cast<int>(p.x), static_cast<int>(p.y));
  }
  const Box area = within.has_value() ? *within : BoxOf(seed);
  const cv::Rect roi = Grown(area, options_.margin, w, h);
  cv::Mat gc(roi.height, roi.width, CV_8U, cv::Scalar(cv::GC_PR_BGD));
  const Mask allowed = within.has_value() ? BoxMask(w, h, *within) : Mask(w, h).Not();
  for (int y = 0; y < roi.height; ++y) {
    for (int x = 0; x < roi.width; ++x) {
      const int ix = roi.x + x, iy = roi.y + y;
      if (!allowed.get(ix, iy)) {
        gc.at<uint8_t>(y, x) = cv::GC_BGD;
      } else if (seed.get(ix, iy)) {
        gc.at<uint8_t>(y, x) = cv::GC_PR_FGD;
      }
    }
  }
  auto disc = [&](const Point& p, uint8_t value) {
    const int cx = static_cast<int>(p.x) - roi.x, cy = static_cast<int>(p.y) - roi.y;
    for (int dy = -kSeedDiscRadius; dy <= kSeedDiscRadius; ++dy)
      for (int dx = -kSeedDiscRadius; dx <= kSeedDiscRadius; ++dx) {
        const int x = cx + dx, y = cy + dy;
        if (dx * dx + dy * dy > kSeedDiscRadius * kSeedDiscRadius) continue;
        if (x >= 0 && y >= 0 && x < roi.width && y < roi.height) gc.at<uint8_t>(y, x) = value;
      }
  };
  for (const Point& p : negatives) {
    const Mask* r = region_at(p);
    if (r != nullptr && r->IntersectionCount(seed) == 0) {
      for (int y = 0; y < roi.height; ++y)
        for (int x = 0; x < roi.width; ++x)
          if (r->get(roi.x + x, roi.y + y)) gc.at<uint8_t>(y, x) = cv::GC_PR_BGD;
    }
    disc(p, cv::GC_BGD);
  }
  for (const Point& p : positives) disc(p, cv::GC_FGD);
  const cv::Mat init = gc.clone();
  if (!RunGrabCut(Crop(image_, roi), gc, cv::Rect(), cv::GC_INIT_WITH_MASK, options_.iterations)) {
    gc = init;  // OpenCV refused (no background left): the initial labels stand
  }
  const Mask fg = Foreground(gc, roi, w, h) & allowed;
  Mask m(w, h);
  for (const Point& p : positives)
    m = m | ComponentAt(fg, static_cast<int>(p.x), static_cast<int>(p.y));
  if (m.none()) return {};
  int pos_in = 0, neg_in = 0;
  for (const Point& p : positives) pos_in += m.get(static_cast<int>(p.x), static_cast<int>(p.y));
  for (const Point& p : negatives) neg_in += m.get(static_cast<int>(p.x), static_cast<int>(p.y));
  const double share = static_cast<double>(pos_in) / positives.size() -
                       (negatives.empty() ? 0.0 : static_cast<double>(neg_in) / negatives.size());
  return Finish({{m, 0.5 + 0.49 * std::clamp(share, 0.0, 1.0), {}}});
}

SegmenterRegistry::Entry ClassicalSegmenterEntry() {
  auto create = [](const BackendContext& c) -> core::StatusOr<std::unique_ptr<Segmenter>> {
    ASSIGN_OR_RETURN(ClassicalSegmenterOptions o, ParseClassicalSegmenterOptions(c.options));
    o.set = c.set;
    return std::unique_ptr<Segmenter>(new ClassicalSegmenter(o));
  };
  return {{.reads_scene = false, .create = create},
          "classical",
          "pixels only: colour and shape lexicon -> components; boxes and points via GrabCut",
          [] { return std::unique_ptr<Segmenter>(new ClassicalSegmenter()); },
          {{"classical.iterations", "GrabCut rounds (1..10, default 3)"},
           {"classical.margin", "GrabCut crop growth, x the box size per side (0..2, 0.25)"},
           {"classical.min_area", "smallest colour region kept, pixels (1..10000, default 12)"},
           {"classical.runner_up_margin",
            "descriptor distance within which the second category also matches (0..1, 0.05)"}}};
}

}  // namespace tessera::tarot
