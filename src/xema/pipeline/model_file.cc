#include "xema/pipeline/model_file.h"

#include <fmt/format.h>

#include <filesystem>

namespace tessera::xema {
namespace {

core::Status SetInt(const core::Json& obj, const std::string& path, const char* key, int64_t lo,
                    int64_t hi, int64_t* out) {
  if (!obj.contains(key)) return core::Status::Ok();
  ASSIGN_OR_RETURN(*out, core::GetIntInRange(obj, path, key, lo, hi));
  return core::Status::Ok();
}

core::StatusOr<TinyModelSpec> Parse(const core::Json& j) {
  RETURN_IF_ERROR(
      core::CheckKnownKeys(j, "model", {"format", "name", "base", "seed", "dit", "text", "vae"}));
  ASSIGN_OR_RETURN(std::string format, core::GetString(j, "", "format"));
  if (format != kModelFormat) {
    return core::InvalidArgument(
        fmt::format("format: got '{}', must be '{}'", format, kModelFormat));
  }
  ASSIGN_OR_RETURN(std::string base, core::GetString(j, "", "base"));
  auto spec_or = TinyModel(base);
  if (!spec_or.ok()) {
    return core::InvalidArgument(
        fmt::format("base: got '{}', must be one of {}", base, fmt::join(TinyModelNames(), ", ")));
  }
  TinyModelSpec spec = *spec_or;
  ASSIGN_OR_RETURN(spec.name, core::GetString(j, "", "name"));
  for (const std::string& preset : TinyModelNames()) {
    if (spec.name == preset || spec.name.empty()) {
      return core::InvalidArgument(
          fmt::format("name: got '{}', must be a new, non-empty name (not a preset's)", spec.name));
    }
  }
  if (j.contains("seed")) {
    ASSIGN_OR_RETURN(int64_t seed, core::GetNonNegativeInt(j, "", "seed"));
    spec.seed = static_cast<uint64_t>(seed);
  }
  if (j.contains("dit")) {
    const core::Json& d = j["dit"];
    RETURN_IF_ERROR(
        core::CheckKnownKeys(d, "dit", {"hidden", "num_heads", "num_layers", "ffn_hidden"}));
    RETURN_IF_ERROR(SetInt(d, "dit", "hidden", 1, 1 << 14, &spec.dit.hidden));
    RETURN_IF_ERROR(SetInt(d, "dit", "num_heads", 1, 256, &spec.dit.num_heads));
    RETURN_IF_ERROR(SetInt(d, "dit", "num_layers", 1, 256, &spec.dit.num_layers));
    RETURN_IF_ERROR(SetInt(d, "dit", "ffn_hidden", 1, 1 << 16, &spec.dit.ffn_hidden));
  }
  if (j.contains("text")) {
    const core::Json& t = j["text"];
    RETURN_IF_ERROR(core::CheckKnownKeys(
        t, "text", {"hidden", "num_heads", "num_layers", "ffn_hidden", "vocab", "tokens"}));
    RETURN_IF_ERROR(SetInt(t, "text", "hidden", 1, 1 << 14, &spec.text.hidden));
    RETURN_IF_ERROR(SetInt(t, "text", "num_heads", 1, 256, &spec.text.num_heads));
    RETURN_IF_ERROR(SetInt(t, "text", "num_layers", 1, 64, &spec.text.num_layers));
    RETURN_IF_ERROR(SetInt(t, "text", "ffn_hidden", 1, 1 << 16, &spec.text.ffn_hidden));
    RETURN_IF_ERROR(SetInt(t, "text", "vocab", 2, 1 << 20, &spec.text.vocab));
    RETURN_IF_ERROR(SetInt(t, "text", "tokens", 1, 4096, &spec.text.tokens));
  }
  if (j.contains("vae")) {
    const core::Json& v = j["vae"];
    RETURN_IF_ERROR(core::CheckKnownKeys(v, "vae", {"channels"}));
    if (v.contains("channels")) {
      const core::Json& c = v["channels"];
      if (!c.is_array() || c.empty() || c.size() > 8) {
        return core::InvalidArgument("vae.channels: got " + core::ShowJson(c) +
                                     ", must be a list of 1 to 8 channel counts");
      }
      spec.vae.channels.clear();
      for (size_t i = 0; i < c.size(); ++i) {
        if (!c[i].is_number_integer() || c[i].get<int64_t>() < 1 || c[i].get<int64_t>() > 4096) {
          return core::InvalidArgument(
              fmt::format("vae.channels[{}]: got {}, must be an integer "
                          "in [1, 4096]",
                          i, core::ShowJson(c[i])));
        }
        spec.vae.channels.push_back(c[i].get<int64_t>());
      }
      spec.spatial_factor = int64_t{1} << (spec.vae.channels.size() - 1);
    }
  }
  // The DiT reads the text encoder's tokens and the patchified latent.
  spec.dit.in_channels = spec.latent_channels * spec.patch * spec.patch;
  RETURN_IF_ERROR(ValidateSpec(spec));
  if (models::SmallDitParameterCount(spec.dit) > 1e9) {
    return core::InvalidArgument(
        fmt::format("dit: {} parameters, must be <= 1e9 for a model run on this CPU",
                    models::SmallDitParameterCount(spec.dit)));
  }
  return spec;
}

}  // namespace

core::StatusOr<TinyModelSpec> TinyModelFromJson(const core::Json& j, const std::string& source) {
  auto spec = Parse(j);
  if (!spec.ok()) return spec.status().WithPrefix(source);
  return spec;
}

core::StatusOr<TinyModelSpec> ReadTinyModelFile(const std::string& path) {
  ASSIGN_OR_RETURN(core::Json j, core::ReadJsonFile(path));
  return TinyModelFromJson(j, path);
}

core::StatusOr<TinyModelSpec> ResolveTinyModel(const std::string& name_or_path) {
  auto preset = TinyModel(name_or_path);
  if (preset.ok()) return preset;
  std::error_code ec;
  if (std::filesystem::exists(name_or_path, ec)) return ReadTinyModelFile(name_or_path);
  return core::NotFound(fmt::format("model: got '{}', must be one of {} or a model JSON file",
                                    name_or_path, fmt::join(TinyModelNames(), ", ")));
}

}  // namespace tessera::xema
