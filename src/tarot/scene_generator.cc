#include "tarot/scene_generator.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/check.h"
#include "core/rng.h"
#include "tarot/fashion_mnist.h"
#include "tarot/fmnist_items.h"
#include "tarot/seeded.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr int kLayoutAttempts = 64;
constexpr int kPlacementTries = 60;
constexpr int kMinPartPixels = 12;

const std::vector<Rgb>& PaleColours() {
  static const std::vector<Rgb> c = {{246, 241, 230}, {234, 241, 250}, {238, 246, 234},
                                     {250, 244, 244}, {242, 242, 242}, {248, 246, 232}};
  return c;
}

// The test items an fmnist scene draws from, per label: those with at least half their class's
// median count of pixels above kItemThreshold (the darkest items would show as a few specks).
// Computed once per loaded split.
using ItemPools = std::vector<std::vector<int>>;
std::shared_ptr<const ItemPools> EligibleItems(const std::shared_ptr<const FmnistData>& items) {
  static std::mutex mu;
  static std::map<const FmnistData*, std::shared_ptr<const ItemPools>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(items.get());
  if (it != cache.end()) return it->second;
  auto pools = std::make_shared<ItemPools>(kFmnistClasses);
  for (int label = 0; label < kFmnistClasses; ++label) {
    const std::vector<int>& all = items->by_label[label];
    std::vector<int> ink;
    for (int i : all) {
      const uint8_t* px = items->item(i);
      ink.push_back(static_cast<int>(
          std::count_if(px, px + kFmnistPixels, [](uint8_t v) { return v > kItemThreshold; })));
    }
    std::vector<int> sorted = ink;
    std::sort(sorted.begin(), sorted.end());
    const int median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    for (size_t k = 0; k < all.size(); ++k)
      if (2 * ink[k] >= median) (*pools)[label].push_back(all[k]);
  }
  cache.emplace(items.get(), pools);
  return pools;
}

// The label map of the objects placed so far, with visible pixel counts.
struct Occupancy {
  int width, height;
  std::vector<int16_t> owner;
  std::vector<int8_t> part;
  std::vector<int64_t> full, visible;                         // per object
  std::vector<std::vector<int64_t>> part_full, part_visible;  // per object, per part
};

// The object's own colours (part colours distinct from the main colour and each other where the
// category allows).
// `items`: the Fashion-MNIST test split for an fmnist scene (the object takes an item of its
// category from `pools`, with no mirroring or texture), null for refscenes.
SceneObject DrawObject(core::Rng& rng, const Scene& s, const std::vector<std::string>& categories,
                       const std::vector<std::string>& colours, const FmnistData* items,
                       const ItemPools* pools) {
  SceneObject o;
  // Weights 3, 2, 1, 1 by position: a scene has common and rare categories, so some are unique.
  static constexpr int kWeights[] = {3, 2, 1, 1};
  int total = 0;
  for (size_t i = 0; i < categories.size(); ++i) total += kWeights[i];
  int draw = static_cast<int>(rng.Below(static_cast<uint64_t>(total)));
  size_t pick = 0;
  while (draw >= kWeights[pick]) draw -= kWeights[pick++];
  o.category = categories[pick];
  const CategoryInfo& info = Categories()[CategoryIndex(o.category)];
  std::vector<std::string> allowed;
  for (const std::string& c : info.colours)
    if (std::find(colours.begin(), colours.end(), c) != colours.end()) allowed.push_back(c);
  o.colour = Pick(rng, allowed.empty() ? info.colours : allowed);
  const int size = static_cast<int>(rng.Below(kSizeCount));
  o.size = SizeNames()[size];
  o.half_size_px = SizeFraction(size) * std::min(s.width, s.height) * rng.Uniform(0.92, 1.08);
  if (items) {
    const std::vector<int>& pool = (*pools)[FashionLabel(o.category)];
    CHECK(!pool.empty()) << "no Fashion-MNIST test item of class " << o.category;
    o.item = Pick(rng, pool);
    const uint8_t* px = items->item(o.item);
    o.item_pixels.assign(px, px + kFmnistPixels);
    return o;
  }
  o.mirrored = !info.is_shape && rng.Below(2) == 1;
  o.texture.kind = static_cast<TextureKind>(rng.Below(4));
  o.texture.period_px = UniformInt(rng, 4, 12);
  o.texture.direction = static_cast<int>(rng.Below(4));
  o.texture.seed = rng.NextU64();
  o.texture.amplitude = rng.Uniform(0.06, 0.12);
  if (!info.is_shape) {
    o.parts.push_back({info.parts[0], o.colour, {}, 0});
    std::vector<std::string> used = {o.colour};
    for (size_t p = 1; p < info.parts.size(); ++p) {
      std::vector<std::string> options;
      for (const std::string& c : info.part_colours[p - 1]) {
        if (c == "same") {
          options.push_back(o.colour);
        } else if (std::find(used.begin(), used.end(), c) == used.end()) {
          options.push_back(c);
        }
      }
      if (options.empty()) options = info.part_colours[p - 1];
      const std::string c = Pick(rng, options);
      used.push_back(c);
      o.parts.push_back({info.parts[p], c, {}, 0});
    }
  }
  return o;
}

// Places `o` (already sized) on top of the occupancy if some position keeps every visibility
// bound; returns false after kPlacementTries positions.
bool Place(core::Rng& rng, SceneObject& o, Occupancy& occ, const SceneGeneratorOptions& opt) {
  const int n_parts = std::max<int>(1, static_cast<int>(o.parts.size()));
  const double r = o.half_size_px;
  if (2 * r + 4 >= occ.width || 2 * r + 4 >= occ.height) return false;
  for (int attempt = 0; attempt < kPlacementTries; ++attempt) {
    o.cx = rng.Uniform(r + 2, occ.width - r - 2);
    o.cy = rng.Uniform(r + 2, occ.height - r - 2);
    std::vector<int64_t> lost(occ.full.size(), 0);
    std::vector<std::vector<int64_t>> part_lost(occ.full.size());
    for (size_t k = 0; k < occ.full.size(); ++k) part_lost[k].assign(occ.part_full[k].size(), 0);
    std::vector<int64_t> own(n_parts, 0);
    int64_t own_total = 0;
    ForEachObjectPixel(o, occ.width, occ.height, [&](int x, int y, int p) {
      const size_t idx = static_cast<size_t>(y) * occ.width + x;
      ++own_total;
      ++own[p];
      if (occ.owner[idx] >= 0) {
        ++lost[occ.owner[idx]];
        ++part_lost[occ.owner[idx]][occ.part[idx]];
      }
    });
    bool ok = own_total > 0;
    for (int p = 0; p < n_parts && ok; ++p) ok = own[p] >= kMinPartPixels;
    for (size_t k = 0; k < occ.full.size() && ok; ++k) {
      ok = occ.visible[k] - lost[k] >= opt.min_visible_fraction * occ.full[k];
      for (size_t p = 0; p < part_lost[k].size() && ok; ++p) {
        const int64_t vis = occ.part_visible[k][p] - part_lost[k][p];
        ok = vis >= kMinPartPixels && vis >= opt.min_part_visible * occ.part_full[k][p];
      }
    }
    if (!ok) continue;
    const int16_t id = static_cast<int16_t>(occ.full.size());
    for (size_t k = 0; k < occ.full.size(); ++k) {
      occ.visible[k] -= lost[k];
      for (size_t p = 0; p < part_lost[k].size(); ++p) occ.part_visible[k][p] -= part_lost[k][p];
    }
    ForEachObjectPixel(o, occ.width, occ.height, [&](int x, int y, int p) {
      const size_t idx = static_cast<size_t>(y) * occ.width + x;
      occ.owner[idx] = id;
      occ.part[idx] = static_cast<int8_t>(p);
    });
    occ.full.push_back(own_total);
    occ.visible.push_back(own_total);
    occ.part_full.push_back(own);
    occ.part_visible.push_back(own);
    return true;
  }
  return false;
}

// One layout (objects placed and rendered), or nullopt when fewer than min_objects fit.
std::optional<Scene> DrawLayout(core::Rng& rng, uint64_t seed, const SceneGeneratorOptions& opt,
                                const FmnistData* items, const ItemPools* pools) {
  Scene s;
  s.set = opt.set;
  s.seed = seed;
  s.width = UniformInt(rng, opt.min_side, opt.max_side);
  s.height = UniformInt(rng, opt.min_side, opt.max_side);
  s.background.top = Pick(rng, PaleColours());
  s.background.bottom = Pick(rng, PaleColours());
  s.background.noise = 3;
  s.background.seed = rng.NextU64();

  std::vector<std::string> categories;
  if (items) {
    for (const CategoryInfo& c : Categories())
      if (c.family == CategoryFamily::kFashion) categories.push_back(c.name);
    Shuffle(rng, categories);
    categories.resize(UniformInt(rng, 2, 4));
  } else {
    std::vector<std::string> shapes, things;
    for (const CategoryInfo& c : Categories()) {
      if (c.family == CategoryFamily::kRefscenes) (c.is_shape ? shapes : things).push_back(c.name);
    }
    Shuffle(rng, shapes);
    Shuffle(rng, things);
    const int n_categories = UniformInt(rng, 2, 4);
    const int n_things = rng.Uniform() < 0.75 ? UniformInt(rng, 1, std::min(2, n_categories)) : 0;
    categories.assign(things.begin(), things.begin() + n_things);
    categories.insert(categories.end(), shapes.begin(), shapes.begin() + (n_categories - n_things));
    Shuffle(rng, categories);
  }
  std::vector<std::string> colours;
  for (const PaletteColour& c : Palette()) colours.push_back(c.name);
  Shuffle(rng, colours);
  colours.resize(UniformInt(rng, 4, 6));

  const int n_objects = UniformInt(rng, opt.min_objects, opt.max_objects);
  Occupancy occ{s.width, s.height, {}, {}, {}, {}, {}, {}};
  occ.owner.assign(static_cast<size_t>(s.width) * s.height, -1);
  occ.part.assign(occ.owner.size(), -1);
  for (int i = 0; i < n_objects; ++i) {
    SceneObject o = DrawObject(rng, s, categories, colours, items, pools);
    if (Place(rng, o, occ, opt)) s.objects.push_back(std::move(o));
  }
  if (static_cast<int>(s.objects.size()) < opt.min_objects) return std::nullopt;
  RenderScene(s);
  return s;
}

}  // namespace

core::Status ValidateSceneGeneratorOptions(const SceneGeneratorOptions& o) {
  if (o.set != kSetRefscenes && o.set != kSetFmnist) {
    return core::InvalidArgument("scenes.set: got '" + o.set + "', must be refscenes or fmnist");
  }
  auto range = [](const char* field, double v, double lo, double hi) -> core::Status {
    if (v >= lo && v <= hi) return core::Status::Ok();
    return core::InvalidArgument(std::string("refscenes.") + field + ": got " + std::to_string(v) +
                                 ", must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                 "]");
  };
  RETURN_IF_ERROR(range("min_side", o.min_side, 64, 4096));
  RETURN_IF_ERROR(range("max_side", o.max_side, o.min_side, 4096));
  RETURN_IF_ERROR(range("min_objects", o.min_objects, 1, 32));
  RETURN_IF_ERROR(range("max_objects", o.max_objects, o.min_objects, 32));
  RETURN_IF_ERROR(range("min_visible_fraction", o.min_visible_fraction, 0, 1));
  RETURN_IF_ERROR(range("min_part_visible", o.min_part_visible, 0, 1));
  RETURN_IF_ERROR(range("expressions.per_tier", o.expressions.per_tier, 0, 16));
  RETURN_IF_ERROR(range("expressions.plural_rate", o.expressions.plural_rate, 0, 1));
  RETURN_IF_ERROR(range("expressions.part_rate", o.expressions.part_rate, 0, 1));
  return core::Status::Ok();
}

core::StatusOr<Scene> GenerateScene(uint64_t seed, const SceneGeneratorOptions& options) {
  RETURN_IF_ERROR(ValidateSceneGeneratorOptions(options));
  std::shared_ptr<const FmnistData> items;
  std::shared_ptr<const ItemPools> pools;
  if (options.set == kSetFmnist) {
    auto loaded = SharedFmnist(FmnistSplit::kTest);
    if (!loaded.ok()) {
      return loaded.status().WithPrefix("fmnist scenes draw their items from the test split");
    }
    items = *loaded;
    pools = EligibleItems(items);
  }
  const core::Rng root(seed);
  for (int attempt = 0; attempt < kLayoutAttempts; ++attempt) {
    core::Rng rng = root.Fork(static_cast<uint64_t>(attempt));
    std::optional<Scene> s = DrawLayout(rng, seed, options, items.get(), pools.get());
    if (!s) continue;
    bool complete = true;
    for (Tier t : AllTiers()) {
      std::vector<Expression> e = GenerateTierExpressions(*s, t, rng, options.expressions);
      complete = complete && static_cast<int>(e.size()) >= options.expressions.per_tier;
      if (!complete && options.require_all_tiers) break;
      for (Expression& x : e) s->expressions.push_back(std::move(x));
    }
    if (complete || !options.require_all_tiers) return std::move(*s);
  }
  return core::Infeasible(options.set + ": seed " + std::to_string(seed) + ": no layout in " +
                          std::to_string(kLayoutAttempts) +
                          " carries every tier; lower expressions.per_tier or set "
                          "require_all_tiers = false");
}

uint64_t SceneSeed(uint64_t seed, int index) {
  return core::Rng(seed).Fork(0x5CE11E5ULL + static_cast<uint64_t>(index)).NextU64();
}

core::StatusOr<std::vector<Scene>> GenerateScenes(uint64_t seed, int n,
                                                  const SceneGeneratorOptions& options) {
  if (n < 0 || n > 100000) {
    return core::InvalidArgument("refscenes.n: got " + std::to_string(n) +
                                 ", must be in [0, 100000]");
  }
  std::vector<Scene> scenes;
  for (int i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(Scene s, GenerateScene(SceneSeed(seed, i), options));
    scenes.push_back(std::move(s));
  }
  return scenes;
}

}  // namespace tessera::tarot
