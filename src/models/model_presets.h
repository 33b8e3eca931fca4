// Model presets: the shapes of real models as versioned data files, data/models/<name>.json
// (kind "model", version 1), found like the hardware presets (hw/data_files.h:
// $TESSERA_DATA_DIR, the install dir, else the copy embedded in the binary). One file per
// model, one place for its published numbers; "family" says which readers take it:
//   "dit"                 a DiT's transformer shape (models::DitModel, dit_spec.h; Zellige)
//   "llm"                 a decoder LLM's transformer shape with grouped-query attention
//                         (Compass's planner)
//   "diffusion-pipeline"  text encoder, DiT and VAE decoder of a text-to-image/video model
//                         (Xema's analytic traces)
// Common fields: "kind", "version", "provenance", "sources" (hw/data_files.h header rules),
// "name" (equal to the file's stem) and "family"; the rest are sections (objects) each reader
// validates field by field with the file's origin as prefix. Unknown top-level keys are
// refused.
// Free functions; thread-safe as long as the environment is not modified concurrently.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::models {

inline constexpr int kModelFileVersion = 1;

struct ModelPreset {
  std::string name;
  std::string family;  // "dit", "llm" or "diffusion-pipeline"
  core::Json json;     // the whole file
  std::string origin;  // which copy was read (hw::DataFile::origin)
};

// The preset `name` of `family`. NotFound when no data file has that name; InvalidArgument
// (prefixed with the file's origin) for a malformed file or one of another family.
core::StatusOr<ModelPreset> LoadModelPreset(const std::string& name, const std::string& family);

// Names of the presets of `family`, in natural order (files that do not parse are skipped).
std::vector<std::string> ModelPresetNames(const std::string& family);

// The object `key` of the preset (a section such as "transformer"); InvalidArgument naming the
// file and the key when it is missing or not an object.
core::StatusOr<const core::Json*> PresetSection(const ModelPreset& preset, const std::string& key);

}  // namespace tessera::models
