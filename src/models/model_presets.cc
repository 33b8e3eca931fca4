#include "models/model_presets.h"

#include "hw/data_files.h"

namespace tessera::models {

namespace {

constexpr const char* kModelDir = "models";

core::Status CheckFamily(const std::string& family) {
  if (family == "dit" || family == "llm" || family == "diffusion-pipeline") {
    return core::Status::Ok();
  }
  return core::InvalidArgument("family: got '" + family +
                               "', must be dit, llm or diffusion-pipeline");
}

core::StatusOr<ModelPreset> ReadPreset(const std::string& name) {
  ASSIGN_OR_RETURN(hw::LoadedDataFile f,
                   hw::LoadDataFile(kModelDir, name, "model", kModelFileVersion));
  auto parse = [&]() -> core::StatusOr<ModelPreset> {
    RETURN_IF_ERROR(
        core::CheckKnownKeys(f.json, "",
                             {"kind", "version", "provenance", "sources", "name", "family",
                              "transformer", "text_encoder", "latent", "vae", "default_cfg"}));
    ModelPreset p;
    ASSIGN_OR_RETURN(p.name, core::GetString(f.json, "", "name"));
    if (p.name != name) {
      return core::InvalidArgument("name: got '" + p.name + "', must be the file's name '" + name +
                                   "'");
    }
    ASSIGN_OR_RETURN(p.family, core::GetString(f.json, "", "family"));
    RETURN_IF_ERROR(CheckFamily(p.family));
    p.json = std::move(f.json);
    p.origin = f.origin;
    return p;
  };
  auto p = parse();
  if (!p.ok()) return p.status().WithPrefix(f.origin);
  return p;
}

}  // namespace

core::StatusOr<ModelPreset> LoadModelPreset(const std::string& name, const std::string& family) {
  RETURN_IF_ERROR(CheckFamily(family));
  ASSIGN_OR_RETURN(ModelPreset p, ReadPreset(name));
  if (p.family != family) {
    return core::InvalidArgument(p.origin + ": family: got '" + p.family + "', must be '" + family +
                                 "' (model '" + name + "' is read as a " + family + " model here)");
  }
  return p;
}

std::vector<std::string> ModelPresetNames(const std::string& family) {
  std::vector<std::string> names;
  for (const std::string& stem : hw::ListDataFiles(kModelDir)) {
    auto p = ReadPreset(stem);
    if (p.ok() && p->family == family) names.push_back(stem);
  }
  return names;
}

core::StatusOr<const core::Json*> PresetSection(const ModelPreset& preset, const std::string& key) {
  auto section = core::Member(preset.json, "", key);
  if (!section.ok()) return section.status().WithPrefix(preset.origin);
  if (!(*section)->is_object()) {
    return core::InvalidArgument(preset.origin + ": " + key + ": got " + core::ShowJson(**section) +
                                 ", must be an object");
  }
  return section;
}

}  // namespace tessera::models
