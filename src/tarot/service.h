// The Tarot-SAM3 services the `tessera tarot` commands call (the CLI parses and renders only):
//   WriteSceneSet   n seeded scenes of a set (options.set: refscenes or fmnist) into a folder:
//                   scene_NNNN.png (the image), scene_NNNN.json (the scene program with its
//                   expressions and their targets, tarot/scene.h) and expressions.tsv (scene,
//                   tier, text; one line each). The folder is created when missing (its parent
//                   must exist).
//   RunImageQuery   one image (PNG) through one system with backends chosen by name: a query
//                   (TarotPipeline) or a box prompt (the segmenter's best instance for --box);
//                   with the scene program (--scene) for the backends that read it, and the
//                   IoU against its target when the query is one of the scene's expressions;
//                   the set (given, or the scene's) tells the pixels-only backends the
//                   vocabulary of the image (tarot/backends.h).
//   MaskPng / OverlayPng  the mask as a black-and-white PNG; the image with the mask tinted
//                   magenta at half strength and its boundary drawn black, for a person to look at.
// Messages name the field: "tarot.image: ...", "tarot.query: ...", "tarot.box: ...",
// "tarot.scene: ...", "tarot.set: ...", "tarot.out: ..." (the CLI turns them into its flags);
// backend names and options are checked by the registries (tarot/backends.h).
// Thread-safety: reentrant; each call builds its own backends.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/bench.h"
#include "tarot/call_trace.h"
#include "tarot/pipeline.h"
#include "tarot/scene_generator.h"
#include "tarot/types.h"

namespace tessera::tarot {

struct SceneSetSummary {
  std::string dir;
  std::vector<std::string> files;  // written, in order
  std::vector<Scene> scenes;
  std::map<std::string, int> per_tier;  // expressions per tier
};
core::StatusOr<SceneSetSummary> WriteSceneSet(uint64_t seed, int n, const std::string& dir,
                                              const SceneGeneratorOptions& options = {});

struct RunRequest {
  std::string image_path;
  std::string query;       // the expression (empty with a box)
  std::optional<Box> box;  // a box prompt instead of a query
  std::string scene_path;  // optional: the scene program JSON
  // The set the image comes from (refscenes or fmnist), for the pixels-only backends; empty:
  // the scene's when one is given, else refscenes.
  std::string set;
  System system = System::kFull;
  BackendChoice backends;
  PipelineOptions pipeline;  // the system is taken from `system`
};

struct RunResponse {
  Image image;
  Mask mask;
  std::optional<QueryResult> result;  // query mode
  std::vector<Instance> instances;    // box mode: what the segmenter returned
  CallTrace trace;
  double ms = 0;  // the query (or box prompt), measured
  // When a scene is given and the query is one of its expressions:
  std::optional<double> iou;
  std::string tier;
};

core::StatusOr<RunResponse> RunImageQuery(const RunRequest& request);

// Parses "x0,y0,x1,y1" (pixels) into a box; InvalidArgument naming tarot.box otherwise.
core::StatusOr<Box> ParseBox(const std::string& text);

core::StatusOr<std::string> MaskPng(const Mask& mask);
core::StatusOr<std::string> OverlayPng(const Image& image, const Mask& mask);

}  // namespace tessera::tarot
