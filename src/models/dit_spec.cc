#include "models/dit_spec.h"

#include "core/input_file.h"

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
  auto pos = [](int v, const char* f) -> Status {
    if (v <= 0)
      return core::InvalidArgument(std::string(f) + ": got " + std::to_string(v) +
                                   ", must be >= 1");
    return Status::Ok();
  };
  RETURN_IF_ERROR(pos(m.hidden, "hidden"));
  RETURN_IF_ERROR(pos(m.heads, "heads"));
  RETURN_IF_ERROR(pos(m.layers, "layers"));
  RETURN_IF_ERROR(pos(m.ffn, "ffn"));
  RETURN_IF_ERROR(pos(m.bytes_per_elem, "bytes_per_elem"));
  if (m.text_tokens < 0) {
    return core::InvalidArgument("text_tokens: got " + std::to_string(m.text_tokens) +
                                 ", must be >= 0");
  }
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
    ASSIGN_OR_RETURN(m.name, core::GetString(j, "", "name"));
    ASSIGN_OR_RETURN(int64_t hidden, core::GetPositiveInt(j, "", "hidden"));
    ASSIGN_OR_RETURN(int64_t heads, core::GetPositiveInt(j, "", "heads"));
    ASSIGN_OR_RETURN(int64_t layers, core::GetPositiveInt(j, "", "layers"));
    ASSIGN_OR_RETURN(int64_t ffn, core::GetPositiveInt(j, "", "ffn"));
    ASSIGN_OR_RETURN(int64_t text, core::GetNonNegativeInt(j, "", "text_tokens"));
    ASSIGN_OR_RETURN(int64_t bpe, core::GetPositiveInt(j, "", "bytes_per_elem"));
    if (hidden > (1 << 20) || heads > 4096 || layers > 100000 || ffn > (1 << 22) || bpe > 8 ||
        text > (1 << 24)) {
      return core::InvalidArgument("model sizes: implausibly large value");
    }
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

std::vector<std::string> DitModelPresetNames() { return {"wan2.1-1.3b"}; }

StatusOr<DitModel> DitModelPreset(const std::string& name) {
  if (name == "wan2.1-1.3b") return DitModel{name, 1536, 12, 30, 8960, 512, 2};
  return core::NotFound("model: got '" + name + "', must be one of wan2.1-1.3b or a JSON file");
}

StatusOr<DitModel> LoadDitModel(const std::string& name_or_path) {
  auto preset = DitModelPreset(name_or_path);
  if (preset.ok() || !core::PathExists(name_or_path)) return preset;
  ASSIGN_OR_RETURN(Json j, core::ReadJsonFile(name_or_path));
  return DitModelFromJson(j, name_or_path);
}

}  // namespace tessera::models
