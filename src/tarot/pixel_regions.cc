#include "tarot/pixel_regions.h"

#include <algorithm>
#include <deque>

#include "tarot/silhouettes.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr int kBackgroundMin = 190;
constexpr int64_t kMinComponentPixels = 12;
constexpr double kThingFit = 0.7, kShapeFit = 0.55;

// 4-connected components of pixels with label >= 0; `by_colour` joins only equal labels.
std::vector<Mask> Components(const std::vector<int>& labels, int w, int h, bool by_colour) {
  std::vector<int> comp(labels.size(), -1);
  std::vector<Mask> out;
  std::deque<int> queue;
  for (int start = 0; start < w * h; ++start) {
    if (labels[start] < 0 || comp[start] >= 0) continue;
    const int id = static_cast<int>(out.size());
    out.emplace_back(w, h);
    comp[start] = id;
    queue.push_back(start);
    while (!queue.empty()) {
      const int i = queue.front();
      queue.pop_front();
      const int x = i % w, y = i / w;
      out.back().set(x, y);
      const int nb[4] = {x > 0 ? i - 1 : -1, x + 1 < w ? i + 1 : -1, y > 0 ? i - w : -1,
                         y + 1 < h ? i + w : -1};
      for (int j : nb) {
        if (j < 0 || labels[j] < 0 || comp[j] >= 0) continue;
        if (by_colour && labels[j] != labels[i]) continue;
        comp[j] = id;
        queue.push_back(j);
      }
    }
  }
  std::vector<Mask> kept;
  for (Mask& m : out)
    if (m.count() >= kMinComponentPixels) kept.push_back(std::move(m));
  return kept;
}

std::string SizeFromBox(int category, bool mirrored, const Box& box, int w, int h) {
  UnitExtent e = SilhouetteExtent(category);
  if (mirrored) e = {-e.u1, e.v0, -e.u0, e.v1};
  const double half =
      std::max((box.x1 - box.x0) / (e.u1 - e.u0), (box.y1 - box.y0) / (e.v1 - e.v0));
  return SizeNames()[SizeClassOf(half / std::min(w, h))];
}

}  // namespace

std::vector<int> ColourLabels(const Image& image) {
  std::vector<int> labels(image.pixels.size(), -1);
  const auto& palette = Palette();
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    const Rgb p = image.pixels[i];
    if (std::min({p.r, p.g, p.b}) >= kBackgroundMin) continue;
    double best = 1e30;
    for (size_t c = 0; c < palette.size(); ++c) {
      const Rgb q = palette[c].rgb;
      const double qq = static_cast<double>(q.r) * q.r + static_cast<double>(q.g) * q.g +
                        static_cast<double>(q.b) * q.b;
      const double pq = static_cast<double>(p.r) * q.r + static_cast<double>(p.g) * q.g +
                        static_cast<double>(p.b) * q.b;
      const double s = std::clamp(pq / qq, 0.8, 1.2);
      const double dr = p.r - s * q.r, dg = p.g - s * q.g, db = p.b - s * q.b;
      const double d = dr * dr + dg * dg + db * db;
      if (d < best) {
        best = d;
        labels[i] = static_cast<int>(c);
      }
    }
  }
  return labels;
}

ColourStats StatsOf(const std::vector<int>& labels, const Mask& mask) {
  ColourStats s;
  s.fraction.assign(Palette().size(), 0.0);
  const int64_t n = mask.count();
  if (n == 0) return s;
  for (int y = 0; y < mask.height(); ++y) {
    for (int x = 0; x < mask.width(); ++x) {
      if (!mask.get(x, y)) continue;
      const int l = labels[static_cast<size_t>(y) * mask.width() + x];
      if (l < 0) {
        s.background += 1.0 / n;
      } else {
        s.fraction[l] += 1.0 / n;
      }
    }
  }
  double best = 0;
  for (size_t c = 0; c < s.fraction.size(); ++c) {
    if (s.fraction[c] > best) {
      best = s.fraction[c];
      s.dominant = static_cast<int>(c);
    }
  }
  return s;
}

SilhouetteMatch MatchSilhouette(const Mask& mask, bool shapes_only) {
  SilhouetteMatch best;
  if (mask.none()) return best;
  const Box box = BoxOf(mask);
  for (size_t c = 0; c < Categories().size(); ++c) {
    if (!HasSilhouette(static_cast<int>(c))) continue;
    const bool shape = Categories()[c].is_shape;
    if (shapes_only && !shape) continue;
    for (bool mirrored : {false, true}) {
      if (mirrored && shape) continue;
      const Mask t =
          SilhouetteInBox(static_cast<int>(c), mirrored, box, mask.width(), mask.height());
      const double iou = MaskIou(t, mask);
      if (iou > best.iou) best = {static_cast<int>(c), mirrored, iou};
    }
  }
  return best;
}

Entity Detection::AsEntity() const {
  Entity e{category, colour, size, centroid.x, centroid.y, {}};
  for (const auto& [name, m] : parts) e.parts.push_back(name);
  return e;
}

Mask Detection::PartMask(const std::string& part) const {
  if (part.empty()) return mask;
  for (const auto& [name, m] : parts)
    if (name == part) return m;
  return Mask(mask.width(), mask.height());
}

std::vector<Detection> DetectObjects(const Image& image) {
  const int w = image.width, h = image.height;
  const std::vector<int> labels = ColourLabels(image);
  const std::vector<Mask> blobs = Components(labels, w, h, /*by_colour=*/false);
  const std::vector<Mask> pieces = Components(labels, w, h, /*by_colour=*/true);
  std::vector<Detection> out;
  for (const Mask& blob : blobs) {
    const SilhouetteMatch m = MatchSilhouette(blob, /*shapes_only=*/false);
    if (m.category >= 0 && !Categories()[m.category].is_shape && m.iou >= kThingFit) {
      const CategoryInfo& info = Categories()[m.category];
      const Box box = BoxOf(blob);
      Detection d;
      d.category = info.name;
      d.mask = blob;
      d.fit = m.iou;
      d.centroid = CentroidOf(blob);
      Mask assigned(w, h);
      for (size_t p = 0; p < info.parts.size(); ++p) {
        Mask pm = SilhouetteInBox(m.category, m.mirrored, box, w, h, static_cast<int>(p)) & blob;
        assigned = assigned | pm;
        d.parts.push_back({info.parts[p], std::move(pm)});
      }
      d.parts[0].second = d.parts[0].second | blob.Minus(assigned);
      const ColourStats st = StatsOf(labels, d.parts[0].second);
      d.colour = st.dominant >= 0 ? Palette()[st.dominant].name : "";
      d.size = SizeFromBox(m.category, m.mirrored, box, w, h);
      out.push_back(std::move(d));
      continue;
    }
    for (const Mask& piece : pieces) {
      if (piece.IntersectionCount(blob) == 0) continue;
      const SilhouetteMatch s = MatchSilhouette(piece, /*shapes_only=*/true);
      if (s.iou < kShapeFit) continue;
      Detection d;
      d.category = Categories()[s.category].name;
      d.mask = piece;
      d.fit = s.iou;
      d.centroid = CentroidOf(piece);
      const ColourStats st = StatsOf(labels, piece);
      d.colour = st.dominant >= 0 ? Palette()[st.dominant].name : "";
      d.size = SizeFromBox(s.category, false, BoxOf(piece), w, h);
      out.push_back(std::move(d));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Detection& a, const Detection& b) { return a.fit > b.fit; });
  return out;
}

}  // namespace tessera::tarot
