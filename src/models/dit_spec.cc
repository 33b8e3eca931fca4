#include "models/dit_spec.h"

#include "core/input_file.h"
#include "models/model_presets.h"

namespace tessera::models {

using core::Json;
using core::Status;
using core::StatusOr;

double DitModel::params() const {
  double d = hidden;
  // Self-attention and cross-attention projections (4 d^2 each) and the FFN (2 d F); the
  // per-block adaLN modulation table (6 d) and norms are negligible.
  double per_layer = 8 * d * d + 2 * d * ffn;
  return per_layer * layers;
}

Status Validate(const DitModel& m) {
  auto in_range = [](int64_t v, int64_t lo, int64_t hi, const char* f) -> Status {
    if (v < lo) {
      return core::InvalidArgument(std::string(f) + ": got " + std::to_string(v) +
                                   ", must be >= " + std::to_string(lo));
    }
    if (v > hi) {
      return core::InvalidArgument(std::string(f) + ": got " + std::to_string(v) +
                                   ", must be <= " + std::to_string(hi) + " (a plausible model)");
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(in_range(m.hidden, 1, kMaxModelHidden, "hidden"));
  RETURN_IF_ERROR(in_range(m.heads, 1, kMaxModelHeads, "heads"));
  RETURN_IF_ERROR(in_range(m.layers, 1, kMaxModelLayers, "layers"));
  RETURN_IF_ERROR(in_range(m.ffn, 1, kMaxModelFfn, "ffn"));
  RETURN_IF_ERROR(in_range(m.bytes_per_elem, 1, kMaxModelBytesPerElem, "bytes_per_elem"));
  RETURN_IF_ERROR(in_range(m.text_tokens, 0, kMaxModelTextTokens, "text_tokens"));
  if (m.hidden % m.heads != 0) {
    return core::InvalidArgument("heads: got " + std::to_string(m.heads) +
                                 ", must divide hidden (" + std::to_string(m.hidden) + ")");
  }
  return Status::Ok();
}

Json ToJson(const DitModel& m) {
  return {{"name", m.name},
          {"hidden", m.hidden},
          {"heads", m.heads},
          {"layers", m.layers},
          {"ffn", m.ffn},
          {"text_tokens", m.text_tokens},
          {"bytes_per_elem", m.bytes_per_elem}};
}

StatusOr<DitModel> DitModelFromJson(const Json& j, const std::string& source) {
  auto parse = [&]() -> StatusOr<DitModel> {
    DitModel m;
    // The fields ToJson writes, nothing else (e.g. a "dropout" this model does not have).
    RETURN_IF_ERROR(core::CheckKnownKeys(
        j, "", {"name", "hidden", "heads", "layers", "ffn", "text_tokens", "bytes_per_elem"}));
    ASSIGN_OR_RETURN(m.name, core::GetString(j, "", "name"));
    // Each range is checked before the value is narrowed to int.
    ASSIGN_OR_RETURN(int64_t hidden, core::GetIntInRange(j, "", "hidden", 1, kMaxModelHidden));
    ASSIGN_OR_RETURN(int64_t heads, core::GetIntInRange(j, "", "heads", 1, kMaxModelHeads));
    ASSIGN_OR_RETURN(int64_t layers, core::GetIntInRange(j, "", "layers", 1, kMaxModelLayers));
    ASSIGN_OR_RETURN(int64_t ffn, core::GetIntInRange(j, "", "ffn", 1, kMaxModelFfn));
    ASSIGN_OR_RETURN(int64_t text,
                     core::GetIntInRange(j, "", "text_tokens", 0, kMaxModelTextTokens));
    ASSIGN_OR_RETURN(int64_t bpe,
                     core::GetIntInRange(j, "", "bytes_per_elem", 1, kMaxModelBytesPerElem));
    m.hidden = static_cast<int>(hidden);
    m.heads = static_cast<int>(heads);
    m.layers = static_cast<int>(layers);
    m.ffn = static_cast<int>(ffn);
    m.text_tokens = static_cast<int>(text);
    m.bytes_per_elem = static_cast<int>(bpe);
    RETURN_IF_ERROR(Validate(m));
    return m;
  };
  auto r = parse();
  if (!r.ok()) return r.status().WithPrefix(source);
  return r;
}

std::vector<std::string> DitModelPresetNames() { return ModelPresetNames("dit"); }

StatusOr<DitModel> DitModelPreset(const std::string& name) {
  auto preset = LoadModelPreset(name, "dit");
  if (preset.status().code() == core::StatusCode::kNotFound) {
    std::string all;
    for (const std::string& n : DitModelPresetNames()) all += (all.empty() ? "" : ", ") + n;
    return core::NotFound("model: got '" + name + "', must be one of " + all + " or a JSON file");
  }
  if (!preset.ok()) return preset.status();
  ASSIGN_OR_RETURN(const Json* shape, PresetSection(*preset, "transformer"));
  Json j = *shape;
  j["name"] = preset->name;
  return DitModelFromJson(j, preset->origin + ": transformer");
}

StatusOr<DitModel> LoadDitModel(const std::string& name_or_path) {
  auto preset = DitModelPreset(name_or_path);
  if (preset.ok() || !core::PathExists(name_or_path)) return preset;
  ASSIGN_OR_RETURN(Json j, core::ReadJsonFile(name_or_path));
  return DitModelFromJson(j, name_or_path);
}

}  // namespace tessera::models
