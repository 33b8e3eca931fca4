#include "compass/model_shapes.h"

#include <algorithm>

#include "core/check.h"
#include "models/model_presets.h"

namespace tessera::compass {

namespace {

std::string Divisibility(const std::string& field, int64_t value, int tp) {
  return field + ": got " + std::to_string(value) + ", not divisible by tp " + std::to_string(tp);
}

}  // namespace

const std::vector<std::string>& ModelPresetNames() {
  static const std::vector<std::string> kNames = {"llama2-7b", "llama2-13b", "llama3-8b",
                                                  "llama2-70b"};
  return kNames;
}

namespace {

// The shape fields of a model file or of a preset's "transformer" section (`m->name` set by the
// caller).
core::Status ParseShapeFields(const core::Json& j, const std::string& where, TransformerShape* m) {
  constexpr int64_t kMax = int64_t{1} << 20;
  ASSIGN_OR_RETURN(m->hidden, core::GetIntInRange(j, where, "hidden", 1, kMax));
  ASSIGN_OR_RETURN(m->ffn, core::GetIntInRange(j, where, "ffn", 1, kMax));
  ASSIGN_OR_RETURN(m->heads, core::GetIntInRange(j, where, "heads", 1, 4096));
  ASSIGN_OR_RETURN(m->kv_heads, core::GetIntInRange(j, where, "kv_heads", 1, 4096));
  ASSIGN_OR_RETURN(m->layers, core::GetIntInRange(j, where, "layers", 1, 1000));
  ASSIGN_OR_RETURN(const core::Json* gated, core::Member(j, where, "gated_mlp"));
  if (!gated->is_boolean()) {
    return core::InvalidArgument(where + ".gated_mlp: got " + core::ShowJson(*gated) +
                                 ", must be true or false");
  }
  m->gated_mlp = gated->get<bool>();
  if (m->hidden % m->heads != 0) {
    return core::InvalidArgument(where + ".hidden: got " + std::to_string(m->hidden) +
                                 ", not divisible by heads " + std::to_string(m->heads));
  }
  if (m->heads % m->kv_heads != 0) {
    return core::InvalidArgument(where + ".kv_heads: got " + std::to_string(m->kv_heads) +
                                 ", must divide heads " + std::to_string(m->heads));
  }
  return core::Status::Ok();
}

// A preset: the "transformer" section of the model file data/models/<name>.json (family llm).
core::StatusOr<TransformerShape> Preset(const std::string& name) {
  ASSIGN_OR_RETURN(models::ModelPreset preset, models::LoadModelPreset(name, "llm"));
  ASSIGN_OR_RETURN(const core::Json* section, models::PresetSection(preset, "transformer"));
  const std::string where = preset.origin + ": transformer";
  RETURN_IF_ERROR(core::CheckKnownKeys(
      *section, where, {"hidden", "ffn", "heads", "kv_heads", "layers", "gated_mlp"}));
  TransformerShape m;
  m.name = preset.name;
  RETURN_IF_ERROR(ParseShapeFields(*section, where, &m));
  return m;
}

}  // namespace

core::StatusOr<TransformerShape> TransformerShapeFromJson(const core::Json& j,
                                                          const std::string& where) {
  RETURN_IF_ERROR(core::CheckKnownKeys(
      j, where,
      {"kind", "version", "name", "hidden", "ffn", "heads", "kv_heads", "layers", "gated_mlp"}));
  RETURN_IF_ERROR(core::CheckKindAndVersion(j, where, "compass-model", 1));
  TransformerShape m;
  ASSIGN_OR_RETURN(m.name, core::GetString(j, where, "name"));
  RETURN_IF_ERROR(ParseShapeFields(j, where, &m));
  return m;
}

core::StatusOr<TransformerShape> LoadTransformerShape(const std::string& name_or_path) {
  auto preset = Preset(name_or_path);
  if (preset.ok() || preset.status().code() != core::StatusCode::kNotFound) return preset;
  if (name_or_path.find('/') == std::string::npos &&
      name_or_path.find(".json") == std::string::npos) {
    std::string all;
    for (const std::string& n : ModelPresetNames()) all += (all.empty() ? "" : ", ") + n;
    return core::NotFound("model: got '" + name_or_path + "', must be one of " + all +
                          " or a model JSON file");
  }
  ASSIGN_OR_RETURN(core::Json j, core::ReadJsonFile(name_or_path));
  return TransformerShapeFromJson(j, name_or_path);
}

core::StatusOr<std::vector<LayerOp>> LayerOps(const TransformerShape& m, int tp, int64_t tokens) {
  if (tp < 1) return core::InvalidArgument("tp: got " + std::to_string(tp) + ", must be >= 1");
  if (m.heads % tp != 0) return core::InvalidArgument(Divisibility("heads", m.heads, tp));
  if (m.kv_heads % tp != 0) {
    return core::InvalidArgument(Divisibility("kv_heads", m.kv_heads, tp) +
                                 " (KV heads are not replicated here)");
  }
  if (m.hidden % tp != 0) return core::InvalidArgument(Divisibility("hidden", m.hidden, tp));
  if (m.ffn % tp != 0) return core::InvalidArgument(Divisibility("ffn", m.ffn, tp));
  if (tokens < tp || tokens % tp != 0) {
    return core::InvalidArgument("tokens: got " + std::to_string(tokens) +
                                 ", must be a positive multiple of tp " + std::to_string(tp) +
                                 " (the token axis is sharded; tokens = seq x mbs)");
  }
  const std::vector<models::TpLayerOp> table =
      models::MegatronTpLayerOps({m.hidden, m.ffn, m.heads, m.kv_heads, m.gated_mlp, tp, tokens});
  // The plan lists the forward operators, then the backward ones grouped by kind (the order
  // its tables and JSON have always had); the table is in call order.
  static const char* const kPlanOrder[] = {"qkv",        "proj",      "fc1",        "fc2",
                                           "proj-dgrad", "fc2-dgrad", "qkv-dgrad",  "fc1-dgrad",
                                           "qkv-wgrad",  "fc1-wgrad", "proj-wgrad", "fc2-wgrad"};
  std::vector<LayerOp> ops;
  for (const char* name : kPlanOrder) {
    const auto it = std::find_if(table.begin(), table.end(),
                                 [&](const models::TpLayerOp& o) { return o.name == name; });
    CHECK(it != table.end()) << "no operator " << name << " in the layer table";
    // An operator that reuses its dgrad's gathered dY is planned as Megatron runs it: the
    // GEMM dW = X^T dY alone (models/tp_layer_ops.h).
    const models::TpGemmDims d = it->needs_collective() ? it->dims : models::GemmOnlyDims(*it);
    ops.push_back(LayerOp{it->name, TpOpShape{it->kind, d.m, d.n, d.k, tp, it->name + " " + m.name},
                          it->needs_collective()});
  }
  return ops;
}

}  // namespace tessera::compass
