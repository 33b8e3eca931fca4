#include "tarot/silhouettes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

#include "core/check.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

// Even-odd point-in-polygon.
bool InPolygon(const std::vector<std::array<double, 2>>& poly, double u, double v) {
  bool in = false;
  for (size_t i = 0, j = poly.size() - 1; i < poly.size(); j = i++) {
    const double ui = poly[i][0], vi = poly[i][1], uj = poly[j][0], vj = poly[j][1];
    if ((vi > v) != (vj > v) && u < (uj - ui) * (v - vi) / (vj - vi) + ui) in = !in;
  }
  return in;
}

const std::vector<std::array<double, 2>>& StarPolygon() {
  static const std::vector<std::array<double, 2>> poly = [] {
    std::vector<std::array<double, 2>> p;
    constexpr double kPi = 3.14159265358979323846;
    for (int k = 0; k < 10; ++k) {
      const double radius = k % 2 == 0 ? 0.97 : 0.42;
      const double angle = -kPi / 2 + k * kPi / 5;
      p.push_back({radius * std::cos(angle), 0.08 + radius * std::sin(angle)});
    }
    return p;
  }();
  return poly;
}

bool InDisc(double u, double v, double cu, double cv, double r) {
  return (u - cu) * (u - cu) + (v - cv) * (v - cv) <= r * r;
}

bool InAnnulus(double u, double v, double cu, double cv, double r0, double r1) {
  const double d2 = (u - cu) * (u - cu) + (v - cv) * (v - cv);
  return d2 >= r0 * r0 && d2 <= r1 * r1;
}

int ShapePart(int category, double u, double v) {
  bool in = false;
  switch (category) {
    case 0:  // circle
      in = InDisc(u, v, 0, 0, 0.95);
      break;
    case 1:  // square
      in = std::abs(u) <= 0.8 && std::abs(v) <= 0.8;
      break;
    case 2:  // triangle, point up
      in = v >= -0.85 && v <= 0.8 && std::abs(u) <= 0.95 * (v + 0.85) / 1.65;
      break;
    case 3:  // star
      in = InPolygon(StarPolygon(), u, v);
      break;
    case 4:  // diamond
      in = std::abs(u) / 0.8 + std::abs(v) / 0.95 <= 1.0;
      break;
    case 5:  // hexagon, flat top and bottom
      in = std::abs(v) <= 0.82 && std::abs(u) + 0.5774 * std::abs(v) <= 0.95;
      break;
    case 6:  // cross
      in = (std::abs(u) <= 0.3 && std::abs(v) <= 0.9) || (std::abs(v) <= 0.3 && std::abs(u) <= 0.9);
      break;
    default:
      CHECK(false) << "not a simple shape: " << category;
  }
  return in ? 0 : -1;
}

int HousePart(double u, double v) {
  if (std::abs(u) <= 0.2 && v >= 0.4 && v <= 0.9) return 2;                     // door
  if (std::abs(u) <= 0.7 && v >= 0.0 && v <= 0.9) return 0;                     // body
  if (v >= -0.9 && v < 0.0 && std::abs(u) <= 0.95 * (v + 0.9) / 0.9) return 1;  // roof
  return -1;
}

int TreePart(double u, double v) {
  if (InDisc(u, v, 0, -0.3, 0.64)) return 0;                   // crown
  if (std::abs(u) <= 0.15 && v >= 0.2 && v <= 0.95) return 1;  // trunk
  return -1;
}

int CupPart(double u, double v) {
  const double w = 0.55 - 0.1 * (v + 0.7) / 1.45;
  if (v >= -0.7 && v <= 0.75 && std::abs(u + 0.2) <= w) return 0;  // body
  if (u > 0.3 && InAnnulus(u, v, 0.42, 0.0, 0.2, 0.45)) return 1;  // handle
  return -1;
}

int UmbrellaPart(double u, double v) {
  if (v <= 0.0 && InDisc(u, v, 0, 0.0, 0.95)) return 0;  // canopy
  if (std::abs(u) <= 0.1 && v > 0.0 && v <= 0.72) return 1;
  if (v > 0.72 && InAnnulus(u, v, 0.2, 0.72, 0.1, 0.28)) return 1;  // the hook
  return -1;
}

int MushroomPart(double u, double v) {
  const double dv = (v - 0.05) / 0.8;
  if (v <= 0.05 && (u / 0.95) * (u / 0.95) + dv * dv <= 1.0) return 0;  // cap
  if (std::abs(u) <= 0.28 && v > 0.05 && v <= 0.9) return 1;            // stem
  return -1;
}

}  // namespace

int SilhouettePart(int category, double u, double v) {
  // The cases below follow the order of Categories(): seven simple shapes, then the things.
  static const bool kOrderChecked = [] {
    const char* names[] = {"circle", "square", "triangle", "star", "diamond",  "hexagon",
                           "cross",  "house",  "tree",     "cup",  "umbrella", "mushroom"};
    CHECK(Categories().size() >= std::size(names));
    for (size_t i = 0; i < Categories().size(); ++i) {
      CHECK_EQ(HasSilhouette(static_cast<int>(i)), i < std::size(names));
      if (i < std::size(names)) {
        CHECK_EQ(Categories()[i].name, names[i]);
      }
    }
    return true;
  }();
  (void)kOrderChecked;
  CHECK(HasSilhouette(category)) << "category " << category << " has no silhouette";
  switch (category) {
    case 7:
      return HousePart(u, v);
    case 8:
      return TreePart(u, v);
    case 9:
      return CupPart(u, v);
    case 10:
      return UmbrellaPart(u, v);
    case 11:
      return MushroomPart(u, v);
    default:
      return ShapePart(category, u, v);
  }
}

UnitExtent SilhouetteExtent(int category) {
  static const std::vector<UnitExtent> extents = [] {
    std::vector<UnitExtent> all;
    constexpr int kSteps = 400;
    for (size_t c = 0; c < Categories().size() && HasSilhouette(static_cast<int>(c)); ++c) {
      UnitExtent e{1, 1, -1, -1};
      for (int j = 0; j < kSteps; ++j) {
        for (int i = 0; i < kSteps; ++i) {
          const double u = -1 + (i + 0.5) * 2.0 / kSteps, v = -1 + (j + 0.5) * 2.0 / kSteps;
          if (SilhouettePart(static_cast<int>(c), u, v) < 0) continue;
          e.u0 = std::min(e.u0, u);
          e.u1 = std::max(e.u1, u);
          e.v0 = std::min(e.v0, v);
          e.v1 = std::max(e.v1, v);
        }
      }
      all.push_back(e);
    }
    return all;
  }();
  CHECK(category >= 0 && category < static_cast<int>(extents.size())) << category;
  return extents[category];
}

Mask SilhouetteInBox(int category, bool mirrored, const Box& box, int width, int height, int part) {
  Mask m(width, height);
  if (box.empty()) return m;
  UnitExtent e = SilhouetteExtent(category);
  if (mirrored) e = {-e.u1, e.v0, -e.u0, e.v1};
  const int x0 = std::max(0, static_cast<int>(std::floor(box.x0)));
  const int y0 = std::max(0, static_cast<int>(std::floor(box.y0)));
  const int x1 = std::min(width, static_cast<int>(std::ceil(box.x1)));
  const int y1 = std::min(height, static_cast<int>(std::ceil(box.y1)));
  const double su = (e.u1 - e.u0) / (box.x1 - box.x0), sv = (e.v1 - e.v0) / (box.y1 - box.y0);
  for (int y = y0; y < y1; ++y) {
    const double v = e.v0 + (y + 0.5 - box.y0) * sv;
    for (int x = x0; x < x1; ++x) {
      double u = e.u0 + (x + 0.5 - box.x0) * su;
      if (mirrored) u = -u;
      const int p = SilhouettePart(category, u, v);
      if (p >= 0 && (part < 0 || p == part)) m.set(x, y);
    }
  }
  return m;
}

}  // namespace tessera::tarot
