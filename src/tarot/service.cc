#include "tarot/service.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <system_error>

#include "core/elapsed.h"
#include "core/input_file.h"
#include "core/output_file.h"
#include "core/parse_number.h"
#include "serve/png.h"
#include "tarot/backends.h"
#include "tarot/traced.h"

namespace tessera::tarot {
namespace {

constexpr Rgb kTint{255, 0, 255};
constexpr double kTintWeight = 0.5;
constexpr Rgb kOutline{0, 0, 0};

core::Status EnsureFolder(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (dir.empty()) return core::InvalidArgument("tarot.out: got an empty folder name");
  const fs::path p(dir);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) {
      return core::InvalidArgument(
          fmt::format("tarot.out: '{}' exists and is not a folder; name a folder", dir));
    }
    return core::Status::Ok();
  }
  // "scenes/" names the folder "scenes": its parent is the current folder, not "scenes".
  fs::path named = p;
  while (!named.has_filename() && named.has_relative_path()) named = named.parent_path();
  const fs::path parent = named.has_parent_path() ? named.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) {
    return core::InvalidArgument(
        fmt::format("tarot.out: the parent folder of '{}' does not exist; create it first", dir));
  }
  if (!fs::create_directory(p, ec) && ec) {
    return core::InvalidArgument(
        fmt::format("tarot.out: cannot create folder '{}': {}", dir, ec.message()));
  }
  return core::Status::Ok();
}

core::StatusOr<std::string> Png(const Image& image) {
  serve::Rgb8Image out;
  out.width = image.width;
  out.height = image.height;
  out.rgb.reserve(image.pixels.size() * 3);
  for (const Rgb& p : image.pixels) {
    out.rgb.push_back(p.r);
    out.rgb.push_back(p.g);
    out.rgb.push_back(p.b);
  }
  return serve::EncodePng(out);
}

core::StatusOr<Image> LoadImage(const std::string& path) {
  if (path.empty()) return core::InvalidArgument("tarot.image: got no image path");
  core::StatusOr<std::string> bytes = core::ReadInputFile(path);
  if (!bytes.ok()) return bytes.status().WithPrefix("tarot.image");
  core::StatusOr<Image> image = ImageFromPng(*bytes);
  if (!image.ok()) {
    return core::InvalidArgument(fmt::format("tarot.image: '{}' is not a readable PNG ({})", path,
                                             image.status().message()));
  }
  if (image->empty()) {
    return core::InvalidArgument(fmt::format("tarot.image: '{}' has no pixels", path));
  }
  return image;
}

core::Status CheckBox(const Box& b, int width, int height) {
  if (!(b.x0 >= 0 && b.y0 >= 0 && b.x1 <= width && b.y1 <= height && b.x0 < b.x1 && b.y0 < b.y1)) {
    return core::InvalidArgument(fmt::format(
        "tarot.box: got {:g},{:g},{:g},{:g}, must lie inside the {}x{} image with x0 < x1 and "
        "y0 < y1 (e.g. 10,20,80,90)",
        b.x0, b.y0, b.x1, b.y1, width, height));
  }
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<SceneSetSummary> WriteSceneSet(uint64_t seed, int n, const std::string& dir,
                                              const SceneGeneratorOptions& options) {
  if (n < 1 || n > 100000) {
    return core::InvalidArgument(fmt::format("tarot.n: got {}, must be in [1, 100000]", n));
  }
  RETURN_IF_ERROR(EnsureFolder(dir));
  SceneSetSummary s;
  s.dir = dir;
  ASSIGN_OR_RETURN(s.scenes, GenerateScenes(seed, n, options));
  std::string tsv = "scene\ttier\ttext\n";
  for (int i = 0; i < n; ++i) {
    const std::string stem = fmt::format("{}/scene_{:04d}", dir, i);
    RETURN_IF_ERROR(SaveScene(s.scenes[i], stem + ".json", stem + ".png"));
    s.files.push_back(stem + ".png");
    s.files.push_back(stem + ".json");
    for (const Expression& e : s.scenes[i].expressions) {
      tsv += fmt::format("{:04d}\t{}\t{}\n", i, TierName(e.tier), e.text);
      ++s.per_tier[TierName(e.tier)];
    }
  }
  const std::string tsv_path = dir + "/expressions.tsv";
  RETURN_IF_ERROR(core::WriteFileAtomically(tsv_path, tsv));
  s.files.push_back(tsv_path);
  return s;
}

core::StatusOr<Box> ParseBox(const std::string& text) {
  std::vector<double> v;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    core::StatusOr<double> x = core::ParseNumber(part, -1e9, 1e9);
    if (!x.ok()) {
      return core::InvalidArgument(fmt::format(
          "tarot.box: got '{}', must be x0,y0,x1,y1 in pixels (e.g. 10,20,80,90)", text));
    }
    v.push_back(*x);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (v.size() != 4) {
    return core::InvalidArgument(
        fmt::format("tarot.box: got '{}' ({} numbers), must be x0,y0,x1,y1 (e.g. 10,20,80,90)",
                    text, v.size()));
  }
  return Box{v[0], v[1], v[2], v[3]};
}

core::StatusOr<RunResponse> RunImageQuery(const RunRequest& r) {
  const bool box_mode = r.box.has_value();
  if (box_mode && !r.query.empty()) {
    return core::InvalidArgument("tarot.query: give a query or a box, not both");
  }
  if (!box_mode && r.query.find_first_not_of(" \t\r\n") == std::string::npos) {
    return core::InvalidArgument(
        "tarot.query: got an empty query, need the expression to segment (e.g. 'the red cup')");
  }
  RunResponse out;
  ASSIGN_OR_RETURN(out.image, LoadImage(r.image_path));
  if (box_mode) RETURN_IF_ERROR(CheckBox(*r.box, out.image.width, out.image.height));
  std::shared_ptr<const Scene> scene;
  if (!r.scene_path.empty()) {
    core::StatusOr<Scene> loaded = LoadScene(r.scene_path);
    if (!loaded.ok()) return loaded.status().WithPrefix("tarot.scene");
    if (loaded->width != out.image.width || loaded->height != out.image.height ||
        loaded->image.pixels != out.image.pixels) {
      return core::InvalidArgument(fmt::format(
          "tarot.scene: '{}' draws a {}x{} image that is not the {}x{} image '{}'; give the "
          "scene's own PNG",
          r.scene_path, loaded->width, loaded->height, out.image.width, out.image.height,
          r.image_path));
    }
    scene = std::make_shared<const Scene>(std::move(loaded).value());
  }
  const std::string set = !r.set.empty() ? r.set : scene != nullptr ? scene->set : kSetRefscenes;
  if (set != kSetRefscenes && set != kSetFmnist) {
    return core::InvalidArgument(
        fmt::format("tarot.set: got '{}', must be refscenes or fmnist", set));
  }
  if (scene != nullptr && set != scene->set) {
    return core::InvalidArgument(fmt::format(
        "tarot.set: got '{}', but the scene '{}' is of the {} set", set, r.scene_path, scene->set));
  }
  auto named = [&](core::Status s) {
    if (s.code() == core::StatusCode::kFailedPrecondition && scene == nullptr) {
      return core::InvalidArgument("tarot.scene: none given, and " + s.message() +
                                   " (or use the pixels-only backends: segmenter classical, "
                                   "reasoner rule)");
    }
    return s;
  };
  core::StatusOr<std::unique_ptr<Segmenter>> seg =
      MakeSegmenter(r.backends.segmenter, {r.backends.segmenter_options, scene, set});
  if (!seg.ok()) return named(seg.status());
  const auto t0 = std::chrono::steady_clock::now();
  if (box_mode) {
    TracedSegmenter traced(**seg, out.image.width, out.image.height, &out.trace);
    RETURN_IF_ERROR(traced.SetImage(out.image));
    ASSIGN_OR_RETURN(out.instances, traced.SegmentBox(*r.box));
    out.mask = BestInstanceMask(out.instances, out.image.width, out.image.height);
    out.ms = core::MillisecondsSince(t0);
    return out;
  }
  core::StatusOr<std::unique_ptr<Reasoner>> rsn =
      MakeReasoner(r.backends.reasoner, {r.backends.reasoner_options, scene, set});
  if (!rsn.ok()) return named(rsn.status());
  std::unique_ptr<FeatureExtractor> features;
  if (UsesMsr(r.system)) {
    core::StatusOr<std::unique_ptr<FeatureExtractor>> f =
        MakeFeatureExtractor(r.backends.features, {r.backends.features_options, scene, set});
    if (!f.ok()) return named(f.status());
    features = std::move(f).value();
  }
  PipelineOptions po = r.pipeline;
  po.system = r.system;
  const auto q0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(QueryResult result,
                   RunQuery(out.image, r.query, **seg, **rsn, features.get(), po, &out.trace));
  out.ms = core::MillisecondsSince(q0);
  out.mask = result.mask;
  out.result = std::move(result);
  if (scene != nullptr) {
    if (const Expression* e = FindExpression(*scene, r.query)) {
      out.iou = SampleIou(out.mask, TargetMask(*scene, e->target));
      out.tier = TierName(e->tier);
    }
  }
  return out;
}

core::StatusOr<std::string> MaskPng(const Mask& mask) {
  Image img(mask.width(), mask.height());
  for (int y = 0; y < mask.height(); ++y)
    for (int x = 0; x < mask.width(); ++x)
      if (mask.get(x, y)) img.at(x, y) = {255, 255, 255};
  return Png(img);
}

core::StatusOr<std::string> OverlayPng(const Image& image, const Mask& mask) {
  if (mask.width() != image.width || mask.height() != image.height) {
    return core::Internal(fmt::format("overlay: mask {}x{} on image {}x{}", mask.width(),
                                      mask.height(), image.width, image.height));
  }
  Image out = image;
  auto blend = [](uint8_t a, uint8_t b) {
    return static_cast<uint8_t>((1 - kTintWeight) * a + kTintWeight * b + 0.5);
  };
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      if (!mask.get(x, y)) continue;
      const bool edge = x == 0 || y == 0 || x + 1 == image.width || y + 1 == image.height ||
                        !mask.get(x - 1, y) || !mask.get(x + 1, y) || !mask.get(x, y - 1) ||
                        !mask.get(x, y + 1);
      const Rgb p = image.at(x, y);
      out.at(x, y) =
          edge ? kOutline : Rgb{blend(p.r, kTint.r), blend(p.g, kTint.g), blend(p.b, kTint.b)};
    }
  }
  return Png(out);
}

}  // namespace tessera::tarot
