// SceneToJson / SceneFromJson (declared in tarot/scene.h): the scene program as JSON.
#include <cmath>

#include "tarot/fashion_mnist.h"
#include "tarot/scene.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr int kSceneVersion = 1;
constexpr int kMaxSide = 4096;
constexpr int kMaxObjects = 64;

core::Json RgbToJson(Rgb c) { return core::Json::array({c.r, c.g, c.b}); }

core::StatusOr<Rgb> RgbFromJson(const core::Json& obj, const std::string& path,
                                const std::string& key) {
  ASSIGN_OR_RETURN(const core::Json* v, core::Member(obj, path, key));
  auto bad = [&] {
    return core::InvalidArgument(core::JoinPath(path, key) + ": got " + core::ShowJson(*v) +
                                 ", must be [r, g, b] with integers in [0, 255]");
  };
  if (!v->is_array() || v->size() != 3) return bad();
  uint8_t c[3];
  for (int i = 0; i < 3; ++i) {
    const core::Json& x = (*v)[i];
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > 255) return bad();
    c[i] = static_cast<uint8_t>(x.get<int64_t>());
  }
  return Rgb{c[0], c[1], c[2]};
}

core::StatusOr<uint64_t> SeedFromJson(const core::Json& obj, const std::string& path,
                                      const std::string& key) {
  ASSIGN_OR_RETURN(const core::Json* v, core::Member(obj, path, key));
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer() && v->get<int64_t>() >= 0)
    return static_cast<uint64_t>(v->get<int64_t>());
  return core::InvalidArgument(core::JoinPath(path, key) + ": got " + core::ShowJson(*v) +
                               ", must be an integer in [0, 2^64)");
}

core::StatusOr<bool> BoolFromJson(const core::Json& obj, const std::string& path,
                                  const std::string& key) {
  ASSIGN_OR_RETURN(const core::Json* v, core::Member(obj, path, key));
  if (!v->is_boolean()) {
    return core::InvalidArgument(core::JoinPath(path, key) + ": got " + core::ShowJson(*v) +
                                 ", must be true or false");
  }
  return v->get<bool>();
}

core::Json TextureToJson(const Texture& t) {
  return {{"kind", TextureName(t.kind)},
          {"period_px", t.period_px},
          {"direction", t.direction},
          {"seed", t.seed},
          {"amplitude", t.amplitude}};
}

core::StatusOr<Texture> TextureFromJson(const core::Json& j, const std::string& path) {
  RETURN_IF_ERROR(
      core::CheckKnownKeys(j, path, {"kind", "period_px", "direction", "seed", "amplitude"}));
  Texture t;
  ASSIGN_OR_RETURN(const std::string kind, core::GetString(j, path, "kind"));
  bool found = false;
  for (TextureKind k :
       {TextureKind::kPlain, TextureKind::kStripes, TextureKind::kDots, TextureKind::kNoise}) {
    if (kind == TextureName(k)) {
      t.kind = k;
      found = true;
    }
  }
  if (!found) {
    return core::InvalidArgument(core::JoinPath(path, "kind") + ": got '" + kind +
                                 "', must be one of plain, stripes, dots, noise");
  }
  ASSIGN_OR_RETURN(const int64_t period, core::GetIntInRange(j, path, "period_px", 2, 32));
  t.period_px = static_cast<int>(period);
  ASSIGN_OR_RETURN(const int64_t dir, core::GetIntInRange(j, path, "direction", 0, 3));
  t.direction = static_cast<int>(dir);
  ASSIGN_OR_RETURN(t.seed, SeedFromJson(j, path, "seed"));
  ASSIGN_OR_RETURN(t.amplitude, core::GetDoubleInRange(j, path, "amplitude", 0.0, 0.2));
  return t;
}

core::StatusOr<std::string> NamedFromJson(const core::Json& j, const std::string& path,
                                          const std::string& key, bool colour) {
  ASSIGN_OR_RETURN(std::string v, core::GetString(j, path, key));
  if (colour ? ColourIndex(v) < 0 : SizeIndex(v) < 0) {
    return core::InvalidArgument(
        core::JoinPath(path, key) + ": got '" + v + "', must be " +
        (colour ? "a palette colour (red, orange, ..., black)" : "small, medium or large"));
  }
  return v;
}

// `items`: the Fashion-MNIST test split for an fmnist scene, null for refscenes.
core::StatusOr<SceneObject> ObjectFromJson(const core::Json& j, const std::string& path, int w,
                                           int h, const FmnistData* items) {
  RETURN_IF_ERROR(core::CheckKnownKeys(j, path,
                                       {"category", "colour", "size", "cx", "cy", "half_size_px",
                                        "mirrored", "texture", "part_colours", "item"}));
  SceneObject o;
  ASSIGN_OR_RETURN(o.category, core::GetString(j, path, "category"));
  const int ci = CategoryIndex(o.category);
  const CategoryFamily family = items ? CategoryFamily::kFashion : CategoryFamily::kRefscenes;
  if (ci < 0 || Categories()[ci].family != family) {
    return core::InvalidArgument(
        core::JoinPath(path, "category") + ": got '" + o.category + "', must be " +
        (items ? "a fashion category of an fmnist scene (t-shirt, trouser, ..., boot)"
               : "a refscenes category (circle, ..., mushroom)"));
  }
  if (items) {
    ASSIGN_OR_RETURN(const int64_t item,
                     core::GetIntInRange(j, path, "item", 0, items->count() - 1));
    const int label = items->labels[static_cast<size_t>(item)];
    if (FashionCategory(label) != ci) {
      return core::InvalidArgument(core::JoinPath(path, "item") + ": got " + std::to_string(item) +
                                   ", a " + Categories()[FashionCategory(label)].name + " in " +
                                   items->dir + "'s test split, but the object is a " + o.category +
                                   " (a different Fashion-MNIST release?)");
    }
    o.item = static_cast<int>(item);
    const uint8_t* px = items->item(o.item);
    o.item_pixels.assign(px, px + kFmnistPixels);
  } else if (j.contains("item")) {
    return core::InvalidArgument(
        core::JoinPath(path, "item") +
        ": only objects of an fmnist scene (\"set\": \"fmnist\") have one");
  }
  ASSIGN_OR_RETURN(o.colour, NamedFromJson(j, path, "colour", true));
  ASSIGN_OR_RETURN(o.size, NamedFromJson(j, path, "size", false));
  ASSIGN_OR_RETURN(o.cx, core::GetDoubleInRange(j, path, "cx", 0, w));
  ASSIGN_OR_RETURN(o.cy, core::GetDoubleInRange(j, path, "cy", 0, h));
  ASSIGN_OR_RETURN(o.half_size_px, core::GetDoubleInRange(j, path, "half_size_px", 2, kMaxSide));
  ASSIGN_OR_RETURN(o.mirrored, BoolFromJson(j, path, "mirrored"));
  ASSIGN_OR_RETURN(const core::Json* t, core::Member(j, path, "texture"));
  ASSIGN_OR_RETURN(o.texture, TextureFromJson(*t, core::JoinPath(path, "texture")));
  const CategoryInfo& info = Categories()[ci];
  const size_t extra = info.is_shape ? 0 : info.parts.size() - 1;
  ASSIGN_OR_RETURN(const core::Json* pc, core::Member(j, path, "part_colours"));
  if (!pc->is_array() || pc->size() != extra) {
    return core::InvalidArgument(core::JoinPath(path, "part_colours") + ": got " +
                                 core::ShowJson(*pc) + ", must list " + std::to_string(extra) +
                                 " colours (the " + o.category + "'s parts after the main one)");
  }
  if (!info.is_shape) {
    o.parts.push_back({info.parts[0], o.colour, {}, 0});
    for (size_t i = 0; i < extra; ++i) {
      const std::string pp = core::JoinPath(path, "part_colours");
      core::Json holder = {{std::to_string(i), (*pc)[i]}};
      ASSIGN_OR_RETURN(std::string colour, NamedFromJson(holder, pp, std::to_string(i), true));
      o.parts.push_back({info.parts[i + 1], colour, {}, 0});
    }
  }
  return o;
}

}  // namespace

core::Json SceneToJson(const Scene& s) {
  core::Json objects = core::Json::array();
  for (const SceneObject& o : s.objects) {
    core::Json pc = core::Json::array();
    for (size_t i = 1; i < o.parts.size(); ++i) pc.push_back(o.parts[i].colour);
    objects.push_back({{"category", o.category},
                       {"colour", o.colour},
                       {"size", o.size},
                       {"cx", o.cx},
                       {"cy", o.cy},
                       {"half_size_px", o.half_size_px},
                       {"mirrored", o.mirrored},
                       {"texture", TextureToJson(o.texture)},
                       {"part_colours", pc}});
    if (o.item >= 0) objects.back()["item"] = o.item;
  }
  core::Json expressions = core::Json::array();
  for (const Expression& e : s.expressions) expressions.push_back(ExpressionToJson(e));
  core::Json out = {{"kind", "tarot-scene"},
                    {"version", kSceneVersion},
                    {"seed", s.seed},
                    {"width", s.width},
                    {"height", s.height},
                    {"background",
                     {{"top", RgbToJson(s.background.top)},
                      {"bottom", RgbToJson(s.background.bottom)},
                      {"noise", s.background.noise},
                      {"seed", s.background.seed}}},
                    {"objects", objects},
                    {"expressions", expressions}};
  if (s.set != kSetRefscenes) out["set"] = s.set;
  return out;
}

core::StatusOr<Scene> SceneFromJson(const core::Json& j, const std::string& source) {
  RETURN_IF_ERROR(core::CheckKnownKeys(j, source,
                                       {"kind", "version", "set", "seed", "width", "height",
                                        "background", "objects", "expressions"}));
  RETURN_IF_ERROR(core::CheckKindAndVersion(j, source, "tarot-scene", kSceneVersion));
  Scene s;
  std::shared_ptr<const FmnistData> items;
  if (j.contains("set")) {
    ASSIGN_OR_RETURN(s.set, core::GetString(j, source, "set"));
    if (s.set != kSetRefscenes && s.set != kSetFmnist) {
      return core::InvalidArgument(core::JoinPath(source, "set") + ": got '" + s.set +
                                   "', must be refscenes or fmnist");
    }
    if (s.set == kSetFmnist) {
      auto loaded = SharedFmnist(FmnistSplit::kTest);
      if (!loaded.ok()) {
        return loaded.status().WithPrefix(source +
                                          ": an fmnist scene draws its items from the "
                                          "Fashion-MNIST test split");
      }
      items = *loaded;
    }
  }
  ASSIGN_OR_RETURN(s.seed, SeedFromJson(j, source, "seed"));
  ASSIGN_OR_RETURN(const int64_t w, core::GetIntInRange(j, source, "width", 16, kMaxSide));
  ASSIGN_OR_RETURN(const int64_t h, core::GetIntInRange(j, source, "height", 16, kMaxSide));
  s.width = static_cast<int>(w);
  s.height = static_cast<int>(h);
  const std::string bp = core::JoinPath(source, "background");
  ASSIGN_OR_RETURN(const core::Json* bg, core::Member(j, source, "background"));
  RETURN_IF_ERROR(core::CheckKnownKeys(*bg, bp, {"top", "bottom", "noise", "seed"}));
  ASSIGN_OR_RETURN(s.background.top, RgbFromJson(*bg, bp, "top"));
  ASSIGN_OR_RETURN(s.background.bottom, RgbFromJson(*bg, bp, "bottom"));
  ASSIGN_OR_RETURN(const int64_t noise, core::GetIntInRange(*bg, bp, "noise", 0, 16));
  s.background.noise = static_cast<int>(noise);
  ASSIGN_OR_RETURN(s.background.seed, SeedFromJson(*bg, bp, "seed"));
  ASSIGN_OR_RETURN(const core::Json* objs, core::Member(j, source, "objects"));
  if (!objs->is_array() || objs->size() > kMaxObjects) {
    return core::InvalidArgument(core::JoinPath(source, "objects") + ": got " +
                                 core::ShowJson(*objs) + ", must be an array of at most " +
                                 std::to_string(kMaxObjects) + " objects");
  }
  for (size_t i = 0; i < objs->size(); ++i) {
    const std::string op = core::JoinPath(source, "objects[" + std::to_string(i) + "]");
    ASSIGN_OR_RETURN(SceneObject o, ObjectFromJson((*objs)[i], op, s.width, s.height, items.get()));
    s.objects.push_back(std::move(o));
  }
  RenderScene(s);
  ASSIGN_OR_RETURN(const core::Json* exprs, core::Member(j, source, "expressions"));
  if (!exprs->is_array()) {
    return core::InvalidArgument(core::JoinPath(source, "expressions") + ": got " +
                                 core::ShowJson(*exprs) + ", must be an array");
  }
  for (size_t i = 0; i < exprs->size(); ++i) {
    const std::string ep = core::JoinPath(source, "expressions[" + std::to_string(i) + "]");
    ASSIGN_OR_RETURN(Expression e, ExpressionFromJson((*exprs)[i], ep));
    auto t = EvaluateInScene(s, e.program);
    if (!t.ok()) return t.status().WithPrefix(ep + ": program");
    if (!(*t == e.target)) {
      return core::InvalidArgument(ep + ": target: the program denotes " + TargetToJson(*t).dump() +
                                   ", the stored target is " + TargetToJson(e.target).dump());
    }
    s.expressions.push_back(std::move(e));
  }
  return s;
}

}  // namespace tessera::tarot
