#include "tarot/scene.h"

#include <algorithm>
#include <cmath>

#include "core/input_file.h"
#include "core/output_file.h"
#include "serve/png.h"
#include "tarot/fashion_mnist.h"
#include "tarot/fmnist_items.h"
#include "tarot/seeded.h"
#include "tarot/silhouettes.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

uint64_t HashXY(uint64_t seed, int64_t x, int64_t y) {
  return MixBits(seed ^ MixBits(static_cast<uint64_t>(x) * 0x9E3779B97F4A7C15ULL +
                                static_cast<uint64_t>(y) * 0xC2B2AE3D27D4EB4FULL));
}

// A value in [-1, 1] from a hash.
double HashUnit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0; }

uint8_t ClampByte(double v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The texture's brightness modulation at (x, y), in [-1, 1].
double TextureValue(const Texture& t, int x, int y) {
  const int p = std::max(2, t.period_px);
  switch (t.kind) {
    case TextureKind::kPlain:
      return 0;
    case TextureKind::kStripes: {
      const int64_t q = t.direction == 0   ? x
                        : t.direction == 1 ? y
                        : t.direction == 2 ? int64_t{x} + y
                                           : int64_t{x} - y;
      return (FloorDiv(q, std::max(1, p / 2)) & 1) ? 1.0 : -1.0;
    }
    case TextureKind::kDots: {
      const int dx = x % p - p / 2, dy = y % p - p / 2;
      return 4 * (dx * dx + dy * dy) <= (p * p) / 4 ? -1.0 : 0.25;
    }
    case TextureKind::kNoise: {
      const int64_t gx = FloorDiv(x, p), gy = FloorDiv(y, p);
      const double fx = (x - gx * p + 0.5) / p, fy = (y - gy * p + 0.5) / p;
      const double a = HashUnit(HashXY(t.seed, gx, gy)), b = HashUnit(HashXY(t.seed, gx + 1, gy));
      const double c = HashUnit(HashXY(t.seed, gx, gy + 1));
      const double d = HashUnit(HashXY(t.seed, gx + 1, gy + 1));
      return (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy;
    }
  }
  return 0;
}

Rgb Shade(Rgb c, double factor) {
  return {ClampByte(c.r * factor), ClampByte(c.g * factor), ClampByte(c.b * factor)};
}

Rgb ColourOf(const std::string& name) {
  const int i = ColourIndex(name);
  CHECK(i >= 0) << "unknown colour " << name;
  return Palette()[i].rgb;
}

}  // namespace

const char* TextureName(TextureKind k) {
  switch (k) {
    case TextureKind::kPlain:
      return "plain";
    case TextureKind::kStripes:
      return "stripes";
    case TextureKind::kDots:
      return "dots";
    case TextureKind::kNoise:
      return "noise";
  }
  return "?";
}

const ScenePart* SceneObject::FindPart(const std::string& name) const {
  for (const ScenePart& p : parts)
    if (p.name == name) return &p;
  return nullptr;
}

void ForEachObjectPixel(const SceneObject& o, int width, int height,
                        const std::function<void(int x, int y, int part)>& fn) {
  if (o.item >= 0) {
    CHECK_EQ(o.item_pixels.size(), static_cast<size_t>(kFmnistPixels));
    ForEachItemPixel(o.item_pixels.data(), o.cx, o.cy, o.half_size_px, width, height,
                     [&](int x, int y, double) { fn(x, y, 0); });
    return;
  }
  const int ci = CategoryIndex(o.category);
  CHECK(ci >= 0) << "unknown category " << o.category;
  const double r = o.half_size_px;
  const int x0 = std::max(0, static_cast<int>(std::floor(o.cx - r)));
  const int x1 = std::min(width - 1, static_cast<int>(std::ceil(o.cx + r)));
  const int y0 = std::max(0, static_cast<int>(std::floor(o.cy - r)));
  const int y1 = std::min(height - 1, static_cast<int>(std::ceil(o.cy + r)));
  for (int y = y0; y <= y1; ++y) {
    const double v = (y + 0.5 - o.cy) / r;
    for (int x = x0; x <= x1; ++x) {
      double u = (x + 0.5 - o.cx) / r;
      if (o.mirrored) u = -u;
      const int p = SilhouettePart(ci, u, v);
      if (p >= 0) fn(x, y, p);
    }
  }
}

std::vector<Entity> Scene::Entities() const {
  std::vector<Entity> e;
  for (const SceneObject& o : objects) {
    Entity en{o.category, o.colour, o.size, o.centroid.x, o.centroid.y, {}};
    for (const ScenePart& p : o.parts) en.parts.push_back(p.name);
    e.push_back(std::move(en));
  }
  return e;
}

void RenderScene(Scene& s) {
  CHECK(s.width > 0 && s.height > 0) << s.width << "x" << s.height;
  s.image = Image(s.width, s.height);
  const Background& bg = s.background;
  for (int y = 0; y < s.height; ++y) {
    const double t = (y + 0.5) / s.height;
    for (int x = 0; x < s.width; ++x) {
      const int n = bg.noise > 0
                        ? static_cast<int>(HashXY(bg.seed, x, y) % (2 * bg.noise + 1)) - bg.noise
                        : 0;
      s.image.at(x, y) = {ClampByte(bg.top.r * (1 - t) + bg.bottom.r * t + n),
                          ClampByte(bg.top.g * (1 - t) + bg.bottom.g * t + n),
                          ClampByte(bg.top.b * (1 - t) + bg.bottom.b * t + n)};
    }
  }
  const size_t n_pixels = static_cast<size_t>(s.width) * s.height;
  std::vector<int16_t> owner(n_pixels, -1);
  std::vector<int8_t> part_of(n_pixels, -1);
  for (size_t k = 0; k < s.objects.size(); ++k) {
    SceneObject& o = s.objects[k];
    o.id = static_cast<int>(k);
    const int ci = CategoryIndex(o.category);
    CHECK(ci >= 0) << "unknown category " << o.category;
    const CategoryInfo& info = Categories()[ci];
    if (!info.is_shape) {
      CHECK_EQ(o.parts.size(), info.parts.size());
    }
    std::vector<Rgb> colours = {ColourOf(o.colour)};
    for (size_t p = 1; p < o.parts.size(); ++p) colours.push_back(ColourOf(o.parts[p].colour));
    o.full_area = 0;
    for (ScenePart& p : o.parts) p.full_area = 0;
    auto paint = [&](int x, int y, int p, double f) {
      const size_t idx = static_cast<size_t>(y) * s.width + x;
      owner[idx] = static_cast<int16_t>(k);
      part_of[idx] = static_cast<int8_t>(p);
      ++o.full_area;
      if (!o.parts.empty()) ++o.parts[p].full_area;
      s.image.at(x, y) = Shade(colours[p], f);
    };
    if (o.item >= 0) {
      CHECK_EQ(o.item_pixels.size(), static_cast<size_t>(kFmnistPixels));
      ForEachItemPixel(o.item_pixels.data(), o.cx, o.cy, o.half_size_px, s.width, s.height,
                       [&](int x, int y, double v) { paint(x, y, 0, ItemShade(v)); });
    } else {
      ForEachObjectPixel(o, s.width, s.height, [&](int x, int y, int p) {
        paint(x, y, p, 1.0 + o.texture.amplitude * TextureValue(o.texture, x, y));
      });
    }
  }
  std::vector<double> sx(s.objects.size(), 0), sy(s.objects.size(), 0);
  for (SceneObject& o : s.objects) {
    o.mask = Mask(s.width, s.height);
    for (ScenePart& p : o.parts) p.mask = Mask(s.width, s.height);
  }
  for (int y = 0; y < s.height; ++y) {
    for (int x = 0; x < s.width; ++x) {
      const size_t idx = static_cast<size_t>(y) * s.width + x;
      if (owner[idx] < 0) continue;
      SceneObject& o = s.objects[owner[idx]];
      o.mask.set(x, y);
      if (!o.parts.empty()) o.parts[part_of[idx]].mask.set(x, y);
      sx[owner[idx]] += x + 0.5;
      sy[owner[idx]] += y + 0.5;
    }
  }
  for (size_t k = 0; k < s.objects.size(); ++k) {
    const int64_t n = s.objects[k].mask.count();
    s.objects[k].centroid = n > 0 ? Point{sx[k] / n, sy[k] / n} : Point{};
  }
}

core::StatusOr<Target> EvaluateInScene(const Scene& scene, const Program& program) {
  ASSIGN_OR_RETURN(std::vector<int> ids, Evaluate(scene.Entities(), program, /*strict=*/true));
  return Target{std::move(ids), program.part};
}

Mask TargetMask(const Scene& scene, const Target& target) {
  Mask m(scene.width, scene.height);
  for (int id : target.objects) {
    CHECK(id >= 0 && id < static_cast<int>(scene.objects.size())) << id;
    const SceneObject& o = scene.objects[id];
    if (target.part.empty()) {
      m = m | o.mask;
    } else {
      const ScenePart* p = o.FindPart(target.part);
      CHECK(p != nullptr) << o.category << " has no part " << target.part;
      m = m | p->mask;
    }
  }
  return m;
}

const Expression* FindExpression(const Scene& scene, const std::string& text) {
  for (const Expression& e : scene.expressions)
    if (e.text == text) return &e;
  return nullptr;
}

core::StatusOr<std::string> ScenePng(const Scene& scene) {
  serve::Rgb8Image img;
  img.width = scene.image.width;
  img.height = scene.image.height;
  img.rgb.reserve(scene.image.pixels.size() * 3);
  for (const Rgb& p : scene.image.pixels) {
    img.rgb.push_back(p.r);
    img.rgb.push_back(p.g);
    img.rgb.push_back(p.b);
  }
  return serve::EncodePng(img);
}

core::StatusOr<Image> ImageFromPng(const std::string& png_bytes) {
  ASSIGN_OR_RETURN(serve::Rgb8Image img, serve::DecodePng(png_bytes));
  Image out(static_cast<int>(img.width), static_cast<int>(img.height));
  for (size_t i = 0; i < out.pixels.size(); ++i)
    out.pixels[i] = {img.rgb[3 * i], img.rgb[3 * i + 1], img.rgb[3 * i + 2]};
  return out;
}

core::Status SaveScene(const Scene& scene, const std::string& json_path,
                       const std::string& png_path) {
  RETURN_IF_ERROR(core::WriteJsonFile(json_path, SceneToJson(scene)));
  if (png_path.empty()) return core::Status::Ok();
  ASSIGN_OR_RETURN(const std::string png, ScenePng(scene));
  return core::WriteFileAtomically(png_path, png);
}

core::StatusOr<Scene> LoadScene(const std::string& json_path) {
  ASSIGN_OR_RETURN(const core::Json j, core::ReadJsonFile(json_path));
  return SceneFromJson(j, json_path);
}

}  // namespace tessera::tarot
