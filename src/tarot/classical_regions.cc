#include "tarot/classical_regions.h"

#include <algorithm>
#include <opencv2/imgproc.hpp>
#include <optional>

#include "tarot/classical_lexicon.h"
#include "tarot/cv_components.h"
#include "tarot/silhouettes.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr double kConfidenceScale = 0.2;
constexpr double kWholeRegionShare = 0.6;
constexpr double kSplitAbove = 0.15;  // a single region's distance above which splits are tried
constexpr double kSplitLevels[] = {0.7, 0.5, 0.35};

int SizeOf(int category, bool mirrored, const Box& box, int width, int height) {
  UnitExtent e = SilhouetteExtent(category);
  if (mirrored) e = {-e.u1, e.v0, -e.u0, e.v1};
  const double half =
      std::max((box.x1 - box.x0) / (e.u1 - e.u0), (box.y1 - box.y0) / (e.v1 - e.v0));
  return SizeClassOf(half / std::min(width, height));
}

// The dominant palette colour of `mask`'s pixels, or -1.
int DominantColour(const std::vector<int>& labels, const Mask& mask) {
  std::vector<int64_t> counts(Palette().size(), 0);
  for (int y = 0; y < mask.height(); ++y)
    for (int x = 0; x < mask.width(); ++x)
      if (mask.get(x, y)) {
        const int l = labels[static_cast<size_t>(y) * mask.width() + x];
        if (l >= 0) ++counts[l];
      }
  int best = -1;
  for (int i = 0; i < static_cast<int>(counts.size()); ++i)
    if (counts[i] > 0 && (best < 0 || counts[i] > counts[best])) best = i;
  return best;
}

void SetRunnerUp(const std::vector<CategoryMatch>& ranked, bool things, ClassicalObject& o) {
  for (const CategoryMatch& m : ranked) {
    if (m.category == o.category || Categories()[m.category].is_shape == things) continue;
    o.runner_up = m.category;
    o.runner_up_distance = m.distance;
    return;
  }
}

ClassicalObject ShapeObject(const ClassicalAnalysis& a, const Mask& region, int colour, int blob) {
  ClassicalObject o;
  const std::vector<CategoryMatch> ranked = RankCategories(region, true);
  o.category = ranked.front().category;
  o.distance = ranked.front().distance;
  SetRunnerUp(ranked, false, o);
  o.confidence = Confidence(o.distance);
  o.colour = colour;
  o.size = SizeOf(o.category, false, BoxOf(region), a.width, a.height);
  o.mask = region;
  o.blob = blob;
  return o;
}

// The blob as thing `category` (its nearest prototype at `distance`): parts from the silhouette
// stretched over its box, snapped to its colour regions.
ClassicalObject ThingObject(const ClassicalAnalysis& a, const Mask& blob_mask,
                            const std::vector<int>& regions, const CategoryMatch& match,
                            const std::vector<CategoryMatch>& ranked, int blob) {
  ClassicalObject o;
  o.category = match.category;
  o.distance = match.distance;
  SetRunnerUp(ranked, true, o);
  o.confidence = Confidence(o.distance);
  o.mask = blob_mask;
  o.blob = blob;
  const Box box = BoxOf(blob_mask);
  const Mask plain = SilhouetteInBox(o.category, false, box, a.width, a.height);
  const Mask mirror = SilhouetteInBox(o.category, true, box, a.width, a.height);
  const bool mirrored = MaskIou(mirror, blob_mask) > MaskIou(plain, blob_mask);
  o.size = SizeOf(o.category, mirrored, box, a.width, a.height);
  o.part_names = Categories()[o.category].parts;
  const int n_parts = static_cast<int>(o.part_names.size());
  std::vector<Mask> templ;
  for (int p = 0; p < n_parts; ++p) {
    templ.push_back(SilhouetteInBox(o.category, mirrored, box, a.width, a.height, p) & blob_mask);
  }
  o.parts.assign(n_parts, Mask(a.width, a.height));
  Mask assigned(a.width, a.height);
  for (int r : regions) {
    const Mask& region = a.regions[r];
    std::vector<int64_t> share(n_parts);
    int best = 0;
    for (int p = 0; p < n_parts; ++p) {
      share[p] = region.IntersectionCount(templ[p]);
      if (share[p] > share[best]) best = p;
    }
    int64_t inside = 0;
    for (int64_t s : share) inside += s;
    if (inside == 0) continue;
    if (share[best] >= kWholeRegionShare * inside) {
      o.parts[best] = o.parts[best] | region;
    } else {
      for (int p = 0; p < n_parts; ++p) o.parts[p] = o.parts[p] | (region & templ[p]);
      // The region's pixels outside every template go to its main share.
      Mask rest = region;
      for (int p = 0; p < n_parts; ++p) rest = rest.Minus(templ[p]);
      o.parts[best] = o.parts[best] | rest;
    }
    assigned = assigned | region;
  }
  // Blob pixels in no region (specks under min_area) follow the template.
  const Mask specks = blob_mask.Minus(assigned);
  for (int p = 0; p < n_parts; ++p) o.parts[p] = o.parts[p] | (specks & templ[p]);
  o.colour = DominantColour(a.labels, o.parts.empty() ? blob_mask : o.parts[0]);
  return o;
}

// One reading of a blob: its objects and their area-weighted mean descriptor distance.
struct Reading {
  std::vector<ClassicalObject> objects;
  double cost = 0;
};

Reading Weighted(std::vector<ClassicalObject> objects) {
  Reading r;
  double weighted = 0;
  int64_t total = 0;
  for (const ClassicalObject& o : objects) {
    const int64_t area = o.mask.count();
    weighted += o.distance * static_cast<double>(area);
    total += area;
  }
  r.cost = weighted / static_cast<double>(std::max<int64_t>(total, 1));
  r.objects = std::move(objects);
  return r;
}

// `mask` (a set of `regions`) as its nearest thing, or nullopt when it has none.
std::optional<ClassicalObject> AsThing(const ClassicalAnalysis& a, const Mask& mask,
                                       const std::vector<int>& regions, int blob) {
  const std::vector<CategoryMatch> ranked = RankCategories(mask, false);
  for (const CategoryMatch& m : ranked) {
    if (!Categories()[m.category].is_shape) return ThingObject(a, mask, regions, m, ranked, blob);
  }
  return std::nullopt;
}

// A single-colour region cut where its distance transform narrows (cv::watershed from the
// components of the distance map above `level` x its maximum), each piece a shape; empty when
// the level gives fewer than two seeds.
std::vector<ClassicalObject> SplitRegion(const ClassicalAnalysis& a, const Mask& region, int colour,
                                         int blob, double level, int min_area) {
  const Box box = BoxOf(region);
  const int x0 = static_cast<int>(box.x0), y0 = static_cast<int>(box.y0);
  const int w = static_cast<int>(box.x1) - x0 + 2, h = static_cast<int>(box.y1) - y0 + 2;
  cv::Mat on = cv::Mat::zeros(h, w, CV_8U);
  for (int y = 1; y + 1 < h; ++y)
    for (int x = 1; x + 1 < w; ++x)
      if (region.get(x0 + x - 1, y0 + y - 1)) on.at<uint8_t>(y, x) = 255;
  cv::Mat dist;
  cv::distanceTransform(on, dist, cv::DIST_L2, 3);
  double max_dist = 0;
  cv::minMaxLoc(dist, nullptr, &max_dist);
  cv::Mat seeds = dist > level * max_dist;
  cv::Mat markers;
  const int n = cv::connectedComponents(seeds, markers, 8, CV_32S);
  if (n < 3) return {};
  // Flood the inverted distance map from the seeds; the background is one more seed.
  cv::Mat relief;
  dist.convertTo(relief, CV_8U, max_dist > 0 ? -255.0 / max_dist : 0, 255);
  cv::Mat relief3;
  cv::cvtColor(relief, relief3, cv::COLOR_GRAY2BGR);
  markers.setTo(n, on == 0);
  cv::watershed(relief3, markers);
  std::vector<ClassicalObject> out;
  for (int k = 1; k < n; ++k) {
    Mask piece(a.width, a.height);
    for (int y = 1; y + 1 < h; ++y)
      for (int x = 1; x + 1 < w; ++x)
        if (markers.at<int>(y, x) == k && on.at<uint8_t>(y, x)) piece.set(x0 + x - 1, y0 + y - 1);
    piece = LargestComponent(piece);
    if (piece.count() < min_area) continue;
    out.push_back(ShapeObject(a, piece, colour, blob));
  }
  if (out.size() < 2) return {};
  return out;
}

// The objects of blob `b`: the reading with the lowest cost among the blob as one object,
// every region a shape, one region peeled off as a shape with the rest a thing, and (one
// region whose best fit is poor) the region split where it narrows. Ties: the earlier reading.
std::vector<ClassicalObject> ReadBlob(const ClassicalAnalysis& a, int b,
                                      const std::vector<int>& regions, int min_area) {
  const Mask& blob = a.blobs[b];
  std::vector<Reading> readings;
  if (regions.size() == 1) {
    const int r = regions[0];
    const std::vector<CategoryMatch> ranked = RankCategories(blob, false);
    if (!Categories()[ranked.front().category].is_shape) {
      readings.push_back(Weighted({ThingObject(a, blob, regions, ranked.front(), ranked, b)}));
    } else {
      readings.push_back(Weighted({ShapeObject(a, a.regions[r], a.region_colour[r], b)}));
    }
    if (readings.front().cost > kSplitAbove) {
      for (double level : kSplitLevels) {
        auto pieces = SplitRegion(a, a.regions[r], a.region_colour[r], b, level, min_area);
        if (!pieces.empty()) readings.push_back(Weighted(std::move(pieces)));
      }
    }
  } else {
    if (auto thing = AsThing(a, blob, regions, b)) readings.push_back(Weighted({*thing}));
    std::vector<ClassicalObject> shapes;
    for (int r : regions) shapes.push_back(ShapeObject(a, a.regions[r], a.region_colour[r], b));
    readings.push_back(Weighted(shapes));
    for (size_t i = 0; i < regions.size(); ++i) {
      std::vector<int> rest;
      for (size_t j = 0; j < regions.size(); ++j)
        if (j != i) rest.push_back(regions[j]);
      auto thing = AsThing(a, blob.Minus(a.regions[regions[i]]), rest, b);
      if (thing) readings.push_back(Weighted({*thing, shapes[i]}));
    }
  }
  size_t best = 0;
  for (size_t i = 1; i < readings.size(); ++i)
    if (readings[i].cost < readings[best].cost) best = i;
  return std::move(readings[best].objects);
}

}  // namespace

double Confidence(double distance) {
  const double r = distance / kConfidenceScale;
  return 1.0 / (1.0 + r * r);
}

Mask ClassicalObject::PartMask(const std::string& part) const {
  if (part.empty()) return mask;
  for (size_t i = 0; i < part_names.size(); ++i)
    if (part_names[i] == part) return parts[i];
  return Mask(mask.width(), mask.height());
}

ClassicalAnalysis AnalyseImage(const Image& image, int min_area) {
  ClassicalAnalysis a;
  a.width = image.width;
  a.height = image.height;
  a.labels = QuantiseImage(image);
  const int n_colours = static_cast<int>(Palette().size());
  cv::Mat fg = cv::Mat::zeros(image.height, image.width, CV_8U);
  std::vector<cv::Mat> per_colour(n_colours);
  for (int c = 0; c < n_colours; ++c) per_colour[c] = cv::Mat::zeros(fg.size(), CV_8U);
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      const int l = a.labels[static_cast<size_t>(y) * image.width + x];
      if (l == kBackground) continue;
      fg.at<uint8_t>(y, x) = 255;
      per_colour[l].at<uint8_t>(y, x) = 255;
    }
  }
  for (int c = 0; c < n_colours; ++c) {
    for (Mask& m : ComponentMasks(per_colour[c], 4, min_area)) {
      a.regions.push_back(std::move(m));
      a.region_colour.push_back(c);
    }
  }
  a.blobs = ComponentMasks(fg, 4, min_area);
  for (int b = 0; b < static_cast<int>(a.blobs.size()); ++b) {
    std::vector<int> regions;
    for (int r = 0; r < static_cast<int>(a.regions.size()); ++r)
      if (a.regions[r].IntersectionCount(a.blobs[b]) > 0) regions.push_back(r);
    if (regions.empty()) continue;
    for (ClassicalObject& o : ReadBlob(a, b, regions, min_area)) a.objects.push_back(std::move(o));
  }
  return a;
}

}  // namespace tessera::tarot
