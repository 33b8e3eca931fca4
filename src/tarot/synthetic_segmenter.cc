#include "tarot/synthetic_segmenter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/rng.h"
#include "tarot/backends.h"
#include "tarot/mask_perturb.h"
#include "tarot/query_parser.h"
#include "tarot/seeded.h"

namespace tessera::tarot {
namespace {

constexpr size_t kMaxPromptChars = 100;  // SAM3's text prompt, as the authors' code cuts it
constexpr double kBoxInsideFraction = 0.5;
constexpr const char* kWho = "tarot.segmenter 'synthetic'";

enum Salt : uint64_t { kOver = 1, kOverPick, kUnder, kUnderPick, kJitter, kScore };

double Draw(uint64_t key, Salt salt) { return HashUniform(MixBits(key ^ MixBits(salt))); }

int64_t FirstPixel(const Mask& m) {
  const auto& w = m.words();
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == 0) continue;
    const int64_t row = static_cast<int64_t>(i) / m.words_per_row();
    const int64_t col = (static_cast<int64_t>(i) % m.words_per_row()) * 64 + __builtin_ctzll(w[i]);
    return row * m.width() + col;
  }
  return -1;
}

void SortInstances(std::vector<Instance>& v) {
  std::vector<std::pair<int64_t, size_t>> first;
  for (size_t i = 0; i < v.size(); ++i) first.push_back({FirstPixel(v[i].mask), i});
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (v[a].score != v[b].score) return v[a].score > v[b].score;
    return first[a].first < first[b].first;
  });
  std::vector<Instance> out;
  for (size_t i : order) out.push_back(std::move(v[i]));
  v = std::move(out);
}

std::string Show(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", v);
  return buf;
}

}  // namespace

core::StatusOr<SyntheticSegmenterOptions> ParseSyntheticSegmenterOptions(
    const core::RegistryOptions& options) {
  SyntheticSegmenterOptions o;
  ASSIGN_OR_RETURN(o.seed, OptionSeed(options, kWho, "synthetic.seed"));
  ASSIGN_OR_RETURN(const double words,
                   OptionNumber(options, kWho, "synthetic.max_words", o.max_words, 1, 100));
  if (words != std::floor(words)) {
    return core::InvalidArgument(std::string(kWho) + ": synthetic.max_words: got '" +
                                 options.at("synthetic.max_words") + "', must be an integer");
  }
  o.max_words = static_cast<int>(words);
  if (auto it = options.find("synthetic.relations"); it != options.end()) {
    if (it->second != "fail" && it->second != "ignore") {
      return core::InvalidArgument(std::string(kWho) + ": synthetic.relations: got '" + it->second +
                                   "', must be fail or ignore");
    }
    o.fail_on_relations = it->second == "fail";
  }
  ASSIGN_OR_RETURN(o.over_seg, OptionNumber(options, kWho, "synthetic.over_seg", 0, 0, 1));
  ASSIGN_OR_RETURN(o.under_seg, OptionNumber(options, kWho, "synthetic.under_seg", 0, 0, 1));
  ASSIGN_OR_RETURN(o.jitter_px, OptionNumber(options, kWho, "synthetic.jitter_px", 0, 0, 32));
  ASSIGN_OR_RETURN(o.score_noise, OptionNumber(options, kWho, "synthetic.score_noise", 0, 0, 1));
  return o;
}

SyntheticSegmenter::SyntheticSegmenter(std::shared_ptr<const Scene> scene,
                                       SyntheticSegmenterOptions options)
    : scene_(std::move(scene)), options_(options) {}

core::Status SyntheticSegmenter::SetImage(const Image& image) {
  image_set_ = false;
  if (scene_ == nullptr) {
    return core::FailedPrecondition(std::string(kWho) +
                                    " reads a scene: build it with BackendContext.scene");
  }
  if (image.width != scene_->width || image.height != scene_->height ||
      image.pixels != scene_->image.pixels) {
    return core::FailedPrecondition(
        std::string(kWho) + ": the image (" + std::to_string(image.width) + "x" +
        std::to_string(image.height) + ") is not the image of its scene (seed " +
        std::to_string(scene_->seed) + ")");
  }
  const size_t n = static_cast<size_t>(scene_->width) * scene_->height;
  owner_.assign(n, -1);
  part_.assign(n, -1);
  for (const SceneObject& o : scene_->objects) {
    for (int y = 0; y < scene_->height; ++y) {
      for (int x = 0; x < scene_->width; ++x) {
        if (!o.mask.get(x, y)) continue;
        const size_t i = static_cast<size_t>(y) * scene_->width + x;
        owner_[i] = static_cast<int16_t>(o.id);
        for (size_t p = 0; p < o.parts.size(); ++p)
          if (o.parts[p].mask.get(x, y)) part_[i] = static_cast<int8_t>(p);
      }
    }
  }
  image_set_ = true;
  return core::Status::Ok();
}

core::Status SyntheticSegmenter::Ready() const {
  if (!image_set_) return core::FailedPrecondition(std::string(kWho) + ": SetImage first");
  return core::Status::Ok();
}

const Mask& SyntheticSegmenter::MaskOf(const Unit& u) const {
  const SceneObject& o = scene_->objects[u.object];
  return u.part < 0 ? o.mask : o.parts[u.part].mask;
}

double SyntheticSegmenter::VisibleFraction(const Unit& u) const {
  const SceneObject& o = scene_->objects[u.object];
  if (u.part < 0) return o.visible_fraction();
  const ScenePart& p = o.parts[u.part];
  return p.full_area > 0 ? static_cast<double>(p.mask.count()) / p.full_area : 0.0;
}

Mask SyntheticSegmenter::Perturbed(const Unit& u, uint64_t key) const {
  const SceneObject& o = scene_->objects[u.object];
  Mask m = MaskOf(u);
  if (options_.over_seg > 0 && Draw(key, kOver) < options_.over_seg) {
    if (u.part >= 0) {
      m = o.mask;
    } else {
      std::vector<int> touching;
      const Mask grown = Dilate4(o.mask);
      for (const SceneObject& other : scene_->objects)
        if (other.id != o.id && grown.IntersectionCount(other.mask) > 0)
          touching.push_back(other.id);
      if (!touching.empty()) {
        const size_t pick = static_cast<size_t>(Draw(key, kOverPick) * touching.size());
        m = m | scene_->objects[touching[pick]].mask;
      }
    }
  }
  if (options_.under_seg > 0 && Draw(key, kUnder) < options_.under_seg) {
    Mask cut;
    if (u.part < 0 && o.parts.size() > 1) {
      const size_t p = 1 + static_cast<size_t>(Draw(key, kUnderPick) * (o.parts.size() - 1));
      cut = m.Minus(o.parts[p].mask);
    } else {
      cut = DropSector(m, Draw(key, kUnderPick) * 6.28318530717958647692);
    }
    if (!cut.none()) m = std::move(cut);
  }
  if (options_.jitter_px > 0) {
    Mask j = JitterBoundary(m, options_.jitter_px, MixBits(key ^ kJitter));
    if (!j.none()) m = std::move(j);
  }
  return m;
}

double SyntheticSegmenter::Score(double base, uint64_t key) const {
  double s = base;
  if (options_.score_noise > 0)
    s += options_.score_noise * core::Rng(MixBits(key ^ kScore)).Normal();
  return std::clamp(s, 0.0, 1.0);
}

core::StatusOr<std::vector<Instance>> SyntheticSegmenter::SegmentText(const std::string& phrase) {
  RETURN_IF_ERROR(Ready());
  const std::string cut = phrase.substr(0, kMaxPromptChars);
  const ParseResult r = ParseQuery(cut, {.facts = false});
  std::vector<Instance> out;
  if (!r.ok || r.words > options_.max_words || (r.relation_words && options_.fail_on_relations))
    return out;
  ObjectSpec spec = r.program.target;
  spec.ordinal = 0;
  for (const SceneObject& o : scene_->objects) {
    const Entity e{o.category, o.colour, o.size, 0, 0, {}};
    if (!SpecCovers(spec, e)) continue;
    Unit u{o.id, -1};
    if (!r.program.part.empty()) {
      const ScenePart* p = o.FindPart(r.program.part);
      if (p == nullptr) continue;
      u.part = static_cast<int>(p - o.parts.data());
    }
    const uint64_t key = KeyHash(options_.seed, "text|" + cut, 16 * o.id + (u.part + 1));
    Mask m = Perturbed(u, key);
    const Box box = BoxOf(m);
    out.push_back({std::move(m), Score(0.7 + 0.25 * VisibleFraction(u), key), box});
  }
  SortInstances(out);
  return out;
}

core::StatusOr<std::vector<Instance>> SyntheticSegmenter::SegmentBox(const Box& box) {
  RETURN_IF_ERROR(Ready());
  const Box image{0, 0, static_cast<double>(scene_->width), static_cast<double>(scene_->height)};
  if (box.empty() || BoxIou(box, image) <= 0) {
    return core::InvalidArgument(std::string(kWho) + ": box [" + Show(box.x0) + ", " +
                                 Show(box.y0) + ", " + Show(box.x1) + ", " + Show(box.y1) +
                                 ") misses the " + std::to_string(scene_->width) + "x" +
                                 std::to_string(scene_->height) + " image");
  }
  const Mask inside = BoxMask(scene_->width, scene_->height, box);
  struct Fit {
    Unit unit;
    double iou;
    bool half_inside;
  };
  std::vector<Fit> fits;
  for (const SceneObject& o : scene_->objects) {
    for (int p = -1; p < static_cast<int>(o.parts.size()); ++p) {
      const Unit u{o.id, p};
      const Mask& m = MaskOf(u);
      const int64_t n = m.count();
      if (n == 0) continue;
      const double iou = BoxIou(BoxOf(m), box);
      fits.push_back({u, iou, m.IntersectionCount(inside) >= kBoxInsideFraction * n});
    }
  }
  std::vector<Fit> kept;
  for (const Fit& f : fits)
    if (f.half_inside) kept.push_back(f);
  if (kept.empty()) {
    const Fit* best = nullptr;
    for (const Fit& f : fits)
      if (f.iou > 0 && (best == nullptr || f.iou > best->iou)) best = &f;
    if (best != nullptr) kept.push_back(*best);
  }
  const std::string prompt =
      "box|" + Show(box.x0) + "," + Show(box.y0) + "," + Show(box.x1) + "," + Show(box.y1);
  std::vector<Instance> out;
  for (const Fit& f : kept) {
    const uint64_t key = KeyHash(options_.seed, prompt, 16 * f.unit.object + (f.unit.part + 1));
    Mask m = Perturbed(f.unit, key);
    const Box b = BoxOf(m);
    out.push_back({std::move(m), Score(0.5 + 0.49 * f.iou, key), b});
  }
  SortInstances(out);
  return out;
}

core::StatusOr<std::vector<Instance>> SyntheticSegmenter::SegmentPoints(
    const std::vector<Point>& points, std::optional<Box> within) {
  RETURN_IF_ERROR(Ready());
  if (points.empty()) return core::InvalidArgument(std::string(kWho) + ": no points");
  std::string prompt = "points|";
  for (const Point& p : points) {
    if (!(p.x >= 0 && p.y >= 0 && p.x < scene_->width && p.y < scene_->height)) {
      return core::InvalidArgument(std::string(kWho) + ": point (" + Show(p.x) + ", " + Show(p.y) +
                                   ") is outside the " + std::to_string(scene_->width) + "x" +
                                   std::to_string(scene_->height) + " image");
    }
    prompt += (p.positive ? "+" : "-") + Show(p.x) + "," + Show(p.y) + ";";
  }
  auto under = [&](const Point& p) {
    const size_t i = static_cast<size_t>(p.y) * scene_->width + static_cast<size_t>(p.x);
    return Unit{owner_[i], part_[i]};
  };
  // Per object hit by positives: the parts hit.
  std::vector<std::vector<int>> hit(scene_->objects.size());
  for (const Point& p : points) {
    const Unit u = under(p);
    if (!p.positive || u.object < 0) continue;
    auto& parts = hit[u.object];
    if (std::find(parts.begin(), parts.end(), u.part) == parts.end()) parts.push_back(u.part);
  }
  Mask result(scene_->width, scene_->height);
  double visible = 0;
  int units = 0;
  const uint64_t key = KeyHash(options_.seed, prompt);
  for (size_t k = 0; k < hit.size(); ++k) {
    if (hit[k].empty()) continue;
    const SceneObject& o = scene_->objects[k];
    const Unit u{static_cast<int>(k), !o.parts.empty() && hit[k].size() == 1 ? hit[k][0] : -1};
    result = result | Perturbed(u, MixBits(key + k));
    visible += VisibleFraction(u);
    ++units;
  }
  // Clicks are honoured, as SAM's interactive head is trained to: the part (or shape) under a
  // positive point is kept whatever the error draws removed, and the one under a negative point
  // is taken out (negatives last: they win over a positive on the same part).
  for (const bool positive : {true, false}) {
    for (const Point& p : points) {
      const Unit u = under(p);
      if (p.positive != positive || u.object < 0) continue;
      const SceneObject& o = scene_->objects[u.object];
      const Mask& unit = o.parts.empty() ? o.mask : o.parts[u.part].mask;
      result = positive ? result | unit : result.Minus(unit);
    }
  }
  if (within) result = result & BoxMask(scene_->width, scene_->height, *within);
  std::vector<Instance> out;
  if (units == 0 || result.none()) return out;
  const Box b = BoxOf(result);
  out.push_back({std::move(result), Score(0.7 + 0.25 * visible / units, key), b});
  return out;
}

SegmenterRegistry::Entry SyntheticSegmenterEntry() {
  auto create = [](const BackendContext& c) -> core::StatusOr<std::unique_ptr<Segmenter>> {
    ASSIGN_OR_RETURN(SyntheticSegmenterOptions o, ParseSyntheticSegmenterOptions(c.options));
    return std::unique_ptr<Segmenter>(new SyntheticSegmenter(c.scene, o));
  };
  return {{.reads_scene = true, .create = create},
          "synthetic",
          "reads the refscenes scene; SAM3-like prompts with seeded error knobs",
          [] { return std::unique_ptr<Segmenter>(new SyntheticSegmenter(nullptr, {})); },
          {{"synthetic.seed", "seed of the error draws (default 0)"},
           {"synthetic.max_words", "phrases with more words return nothing (1..100, default 8)"},
           {"synthetic.relations", "fail (default) or ignore phrases with relation words"},
           {"synthetic.over_seg", "chance a part comes back whole or an object merged (0..1)"},
           {"synthetic.under_seg", "chance an instance loses a part or a sector (0..1)"},
           {"synthetic.jitter_px", "boundary jitter amplitude in pixels (0..32)"},
           {"synthetic.score_noise", "std of the normal noise added to scores (0..1)"}}};
}

}  // namespace tessera::tarot
