// Scene: one image of a benchmark set (refscenes or fmnist) with its ground truth. The scene
// program (size, background, and per object: category, colour, size class, centre, half-size,
// mirroring, texture, part colours, and for fmnist the Fashion-MNIST test item, in drawing
// order) determines everything else: RenderScene draws the image and derives the exact visible
// masks (a later object covers an earlier one; each object's part masks partition its visible
// pixels; a simple shape or a fashion item has no parts). The program also carries the scene's
// referring expressions (tarot/program.h), each with its stored denotation.
//
// Pixels: (x, y) covers [x, x+1) x [y, y+1); a refscenes object covers a pixel when the pixel's
// centre lies inside its silhouette (tarot/silhouettes.h) placed at (cx, cy) with half-size
// `half_size_px`; an fmnist object when its item's intensity there exceeds the threshold of
// tarot/fmnist_items.h (its tint shaded by that intensity, no texture). Textures and the
// background are integer hashes of (x, y, seed): bit-exact.
// JSON: SceneToJson writes the program only ({"kind": "tarot-scene", "version": 1, ...}; an
// fmnist scene adds "set": "fmnist" and per object "item", never the item's pixels);
// SceneFromJson validates every field (messages name the field, the value and what is allowed),
// takes an fmnist scene's items from the Fashion-MNIST test split (an error naming the files
// and the package when it is absent; the item's label must be the object's category),
// re-renders, and checks that each expression still denotes its stored target. The image goes
// to PNG with ScenePng (serve/png.h).
// Thread-safety: values; RenderScene mutates its argument only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "tarot/program.h"
#include "tarot/types.h"

namespace tessera::tarot {

enum class TextureKind { kPlain, kStripes, kDots, kNoise };
const char* TextureName(TextureKind k);

struct Texture {
  TextureKind kind = TextureKind::kPlain;
  int period_px = 8;       // stripe/dot spacing, noise cell size (2..32)
  int direction = 0;       // stripes: 0 along x, 1 along y, 2 along x+y, 3 along x-y
  uint64_t seed = 0;       // noise
  double amplitude = 0.1;  // relative brightness change, <= 0.2
};

struct ScenePart {
  std::string name;       // "roof"
  std::string colour;     // palette name
  Mask mask;              // visible pixels (rendered)
  int64_t full_area = 0;  // pixels before occlusion (rendered)
};

struct SceneObject {
  int id = 0;  // index in Scene::objects = drawing order
  std::string category, colour, size;
  double cx = 0, cy = 0, half_size_px = 0;
  bool mirrored = false;
  Texture texture;
  std::vector<ScenePart> parts;  // things: one per category part; simple shapes: empty
  // fmnist: the index of the object's item in the Fashion-MNIST test split, and its 784 grey
  // values (copied from the dataset by the generator and SceneFromJson); refscenes: -1, empty.
  int item = -1;
  std::vector<uint8_t> item_pixels;
  // Rendered:
  Mask mask;  // visible pixels
  int64_t full_area = 0;
  Point centroid;  // of the visible pixels
  double visible_fraction() const {
    return full_area > 0 ? static_cast<double>(mask.count()) / full_area : 0.0;
  }
  const ScenePart* FindPart(const std::string& name) const;
};

struct Background {
  Rgb top, bottom;  // vertical gradient
  int noise = 4;    // +- per channel, 0..16
  uint64_t seed = 0;
};

inline constexpr const char* kSetRefscenes = "refscenes";
inline constexpr const char* kSetFmnist = "fmnist";

struct Scene {
  std::string set = kSetRefscenes;  // "refscenes" or "fmnist"
  uint64_t seed = 0;
  int width = 0, height = 0;
  Background background;
  std::vector<SceneObject> objects;
  std::vector<Expression> expressions;
  Image image;  // rendered

  // Objects as entities for program evaluation (tarot/program.h).
  std::vector<Entity> Entities() const;
};

// Calls fn(x, y, part) for every pixel of the image the object's silhouette (an fmnist object:
// its item, part 0) covers (before occlusion), row by row.
void ForEachObjectPixel(const SceneObject& o, int width, int height,
                        const std::function<void(int x, int y, int part)>& fn);

// Draws `scene.image` and fills every rendered field of its objects from the program.
void RenderScene(Scene& scene);

// The denotation of `program` in `scene` (tarot/program.h's Evaluate over the scene's objects,
// plus the part check: every denoted object must have the part).
core::StatusOr<Target> EvaluateInScene(const Scene& scene, const Program& program);
// The union of the target's object (or part) masks; an empty mask of the scene's size for an
// empty target.
Mask TargetMask(const Scene& scene, const Target& target);
// The expression whose text is `text` (exact), or nullptr.
const Expression* FindExpression(const Scene& scene, const std::string& text);

core::Json SceneToJson(const Scene& scene);
// `source` names the JSON in messages (a file path).
core::StatusOr<Scene> SceneFromJson(const core::Json& j, const std::string& source);
// The rendered image as PNG bytes, and back.
core::StatusOr<std::string> ScenePng(const Scene& scene);
core::StatusOr<Image> ImageFromPng(const std::string& png_bytes);
// Writes the program to `json_path` and, when `png_path` is not empty, the image.
core::Status SaveScene(const Scene& scene, const std::string& json_path,
                       const std::string& png_path);
core::StatusOr<Scene> LoadScene(const std::string& json_path);

}  // namespace tessera::tarot
