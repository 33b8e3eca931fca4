// The seeded scene generator of the benchmark sets: a scene of 3-10 objects on a pale textured
// background, 256-512 px a side, with exact masks and referring expressions of every tier
// (tarot/expression_generator.h).
//   refscenes  (Tarot-SAM3 part 1's benchmark) simple shapes and things with parts, drawn from
//              their silhouettes, textured;
//   fmnist     Fashion-MNIST test items (tarot/fashion_mnist.h), each of a fashion category
//              drawn uniformly among that class's items with at least half the class's median
//              count of pixels above the mask threshold (the darkest ~5% would show as specks),
//              scaled so that its 28 px frame spans
//              twice the half-size, tinted with its palette colour (tarot/fmnist_items.h); no
//              parts, no mirroring, no texture. Needs the dataset: NotFound / InvalidArgument
//              naming the files otherwise.
//
// A scene draws 2-4 categories (refscenes: simple shapes and things with parts; fmnist: fashion
// classes) and 4-6 palette colours, so that categories and colours repeat and expressions need
// attributes, ordinals and relations.
// Objects are placed one by one, each drawn over the earlier ones; a placement is kept only if
// every object keeps >= min_visible_fraction of its pixels and every part >= min_part_visible of
// its own (and at least 12 pixels), so occlusion never hides what an expression names. When
// `require_all_tiers`, a layout that cannot carry `per_tier` expressions of every tier is drawn
// again from the next sub-seed (up to 64 layouts, then Infeasible).
// Deterministic: the same seed and options give the same scene, bit for bit (core::Rng; no
// std distributions); a refscenes scene does not depend on the fmnist code paths.
// Thread-safety: pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/expression_generator.h"
#include "tarot/scene.h"

namespace tessera::tarot {

struct SceneGeneratorOptions {
  std::string set = "refscenes";       // refscenes or fmnist
  int min_side = 256, max_side = 512;  // image width and height, each drawn in [min, max]
  int min_objects = 3, max_objects = 10;
  double min_visible_fraction = 0.6;  // of each object after occlusion
  double min_part_visible = 0.5;      // of each part after occlusion
  bool require_all_tiers = true;
  ExpressionOptions expressions;
};

// InvalidArgument naming the first bad field ("refscenes.min_side: got 8, must be in [64,
// 4096]"; "scenes.set: got 'x', must be refscenes or fmnist").
core::Status ValidateSceneGeneratorOptions(const SceneGeneratorOptions& o);

core::StatusOr<Scene> GenerateScene(uint64_t seed, const SceneGeneratorOptions& options = {});
// The seed of scene `index` of a set drawn with `seed`.
uint64_t SceneSeed(uint64_t seed, int index);
// Scenes SceneSeed(seed, 0) .. SceneSeed(seed, n - 1).
core::StatusOr<std::vector<Scene>> GenerateScenes(uint64_t seed, int n,
                                                  const SceneGeneratorOptions& options = {});

}  // namespace tessera::tarot
