#include "tarot/classical_lexicon.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "tarot/silhouettes.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr int kBackgroundMinChannel = 190;
constexpr double kMinScale = 0.8, kMaxScale = 1.25;
constexpr int kMaxVertices = 12;
constexpr double kVertexEpsilon = 0.025;  // of the perimeter
constexpr double kWeightVertices = 0.5, kWeightAspect = 0.25;
constexpr int kPrototypeHalfSizes[] = {16, 32, 64};

struct Prototype {
  int category;
  ShapeDescriptors d;
};

std::vector<Prototype> BuildLexicon() {
  std::vector<Prototype> out;
  const int n = static_cast<int>(Categories().size());
  for (int c = 0; c < n; ++c) {
    if (!HasSilhouette(c)) continue;  // fashion items: tarot/fmnist_items.h
    const UnitExtent e = SilhouetteExtent(c);
    for (int half : kPrototypeHalfSizes) {
      for (bool mirrored : {false, true}) {
        // The silhouette at half-size `half`, with a margin of 4 px.
        const double w = (e.u1 - e.u0) * half, h = (e.v1 - e.v0) * half;
        const int width = static_cast<int>(std::ceil(w)) + 8;
        const int height = static_cast<int>(std::ceil(h)) + 8;
        const Mask m = SilhouetteInBox(c, mirrored, Box{4, 4, 4 + w, 4 + h}, width, height);
        ShapeDescriptors d = Describe(m);
        if (d.valid) out.push_back({c, d});
      }
    }
  }
  return out;
}

const std::vector<Prototype>& Lexicon() {
  static const std::vector<Prototype> lexicon = BuildLexicon();
  return lexicon;
}

}  // namespace

int QuantiseColour(Rgb c) {
  if (c.r >= kBackgroundMinChannel && c.g >= kBackgroundMinChannel &&
      c.b >= kBackgroundMinChannel) {
    return kBackground;
  }
  int best = kBackground;
  double best_d = 0;
  const auto& palette = Palette();
  for (int i = 0; i < static_cast<int>(palette.size()); ++i) {
    const Rgb p = palette[i].rgb;
    const double dot = static_cast<double>(c.r) * p.r + static_cast<double>(c.g) * p.g +
                       static_cast<double>(c.b) * p.b;
    const double norm = static_cast<double>(p.r) * p.r + static_cast<double>(p.g) * p.g +
                        static_cast<double>(p.b) * p.b;
    const double f = std::clamp(norm > 0 ? dot / norm : 1.0, kMinScale, kMaxScale);
    const double dr = c.r - f * p.r, dg = c.g - f * p.g, db = c.b - f * p.b;
    const double d = dr * dr + dg * dg + db * db;
    if (best == kBackground || d < best_d) {
      best = i;
      best_d = d;
    }
  }
  return best;
}

std::vector<int> QuantiseImage(const Image& image) {
  std::vector<int> labels(image.pixels.size());
  for (size_t i = 0; i < image.pixels.size(); ++i) labels[i] = QuantiseColour(image.pixels[i]);
  return labels;
}

ShapeDescriptors Describe(const Mask& mask) {
  ShapeDescriptors d;
  const Box b = BoxOf(mask);
  if (b.empty()) return d;
  // The mask's box with a 1 px margin, so that contours never touch the crop's edge.
  const int x0 = static_cast<int>(b.x0), y0 = static_cast<int>(b.y0);
  const int w = static_cast<int>(b.x1) - x0, h = static_cast<int>(b.y1) - y0;
  cv::Mat crop = cv::Mat::zeros(h + 2, w + 2, CV_8U);
  int64_t area = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      if (mask.get(x0 + x, y0 + y)) {
        crop.at<uint8_t>(y + 1, x + 1) = 255;
        ++area;
      }
    }
  }
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(crop, contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_NONE);
  if (contours.empty()) return d;
  size_t largest = 0;
  for (size_t i = 1; i < contours.size(); ++i) {
    if (cv::contourArea(contours[i]) > cv::contourArea(contours[largest])) largest = i;
  }
  const std::vector<cv::Point>& contour = contours[largest];
  const double perimeter = cv::arcLength(contour, true);
  std::vector<cv::Point> hull;
  cv::convexHull(contour, hull);
  // Pixel areas: the contour runs through pixel centres, so the hull misses half a pixel on
  // every side; add it back (perimeter / 2) to compare with the pixel count.
  const double hull_area = cv::contourArea(hull) + cv::arcLength(hull, true) / 2 + 1;
  std::vector<cv::Point> poly;
  cv::approxPolyDP(contour, poly, kVertexEpsilon * perimeter, true);
  d.valid = true;
  // The contour's perimeter through pixel centres, lengthened by the half pixel on every side
  // (2 pi x 0.5 for a closed convex curve), over the pixel count.
  const double outer = perimeter + M_PI;
  d.circularity = 4 * M_PI * static_cast<double>(area) / (outer * outer);
  d.extent = static_cast<double>(area) / (static_cast<double>(w) * h);
  d.solidity = std::min(1.0, static_cast<double>(area) / hull_area);
  d.vertices = static_cast<int>(poly.size());
  d.aspect_log = std::log(static_cast<double>(w) / h);
  return d;
}

double DescriptorDistance(const ShapeDescriptors& a, const ShapeDescriptors& b) {
  const double dc = a.circularity - b.circularity, de = a.extent - b.extent,
               ds = a.solidity - b.solidity;
  const double dv = (std::min(a.vertices, kMaxVertices) - std::min(b.vertices, kMaxVertices)) /
                    static_cast<double>(kMaxVertices);
  const double da = a.aspect_log - b.aspect_log;
  return std::sqrt(dc * dc + de * de + ds * ds + kWeightVertices * dv * dv +
                   kWeightAspect * da * da);
}

double TemplateFit(const Mask& mask, int category) {
  const Box box = BoxOf(mask);
  if (box.empty()) return 0;
  double best = 0;
  for (bool mirrored : {false, true}) {
    const Mask t = SilhouetteInBox(category, mirrored, box, mask.width(), mask.height());
    best = std::max(best, MaskIou(t, mask));
  }
  return best;
}

std::vector<CategoryMatch> RankCategories(const Mask& mask, bool shapes_only) {
  const ShapeDescriptors d = Describe(mask);
  const int n = static_cast<int>(Categories().size());
  std::vector<double> nearest(n, -1);
  for (const Prototype& p : Lexicon()) {
    if (shapes_only && !Categories()[p.category].is_shape) continue;
    const double dist = DescriptorDistance(d, p.d);
    if (nearest[p.category] < 0 || dist < nearest[p.category]) nearest[p.category] = dist;
  }
  std::vector<CategoryMatch> out;
  for (int c = 0; c < n; ++c) {
    if (nearest[c] < 0) continue;
    const double misfit = 1 - TemplateFit(mask, c);
    out.push_back({c, std::sqrt(nearest[c] * nearest[c] + misfit * misfit)});
  }
  std::stable_sort(out.begin(), out.end(), [](const CategoryMatch& a, const CategoryMatch& b) {
    return a.distance < b.distance;
  });
  return out;
}

}  // namespace tessera::tarot
