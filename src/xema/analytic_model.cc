#include "xema/analytic_model.h"

#include <map>
#include <memory>

#include "core/json_util.h"
#include "models/model_presets.h"

namespace tessera::xema {

namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr double kMaxParams = 1e13;

core::StatusOr<int> GetSmallInt(const core::Json& j, const std::string& path, const char* key,
                                int64_t lo, int64_t hi) {
  ASSIGN_OR_RETURN(int64_t v, core::GetIntInRange(j, path, key, lo, hi));
  return static_cast<int>(v);
}

core::Status ReadEncoder(const core::Json& j, AnalyticModel* m) {
  const std::string p = "text_encoder";
  RETURN_IF_ERROR(core::CheckKnownKeys(j, p, {"params", "layers", "hidden", "ffn", "tokens"}));
  ASSIGN_OR_RETURN(m->enc_params, core::GetDoubleInRange(j, p, "params", 1, kMaxParams));
  ASSIGN_OR_RETURN(m->enc_layers, GetSmallInt(j, p, "layers", 1, 4096));
  ASSIGN_OR_RETURN(m->enc_hidden, core::GetIntInRange(j, p, "hidden", 1, kMaxDim));
  ASSIGN_OR_RETURN(m->enc_ffn, core::GetIntInRange(j, p, "ffn", 1, kMaxDim));
  ASSIGN_OR_RETURN(m->enc_tokens, core::GetIntInRange(j, p, "tokens", 1, kMaxDim));
  return core::Status::Ok();
}

core::Status ReadTransformer(const core::Json& j, AnalyticModel* m) {
  const std::string p = "transformer";
  RETURN_IF_ERROR(core::CheckKnownKeys(j, p,
                                       {"params", "double_blocks", "single_blocks", "hidden",
                                        "heads", "ffn", "text_tokens_in_attention"}));
  ASSIGN_OR_RETURN(m->dit_params, core::GetDoubleInRange(j, p, "params", 1, kMaxParams));
  ASSIGN_OR_RETURN(m->double_blocks, GetSmallInt(j, p, "double_blocks", 0, 4096));
  ASSIGN_OR_RETURN(m->single_blocks, GetSmallInt(j, p, "single_blocks", 0, 4096));
  if (m->double_blocks + m->single_blocks < 1) {
    return core::InvalidArgument(p + ": double_blocks + single_blocks: got 0, must be >= 1");
  }
  ASSIGN_OR_RETURN(m->hidden, core::GetIntInRange(j, p, "hidden", 1, kMaxDim));
  ASSIGN_OR_RETURN(m->heads, core::GetIntInRange(j, p, "heads", 1, 4096));
  ASSIGN_OR_RETURN(m->ffn, core::GetIntInRange(j, p, "ffn", 1, kMaxDim));
  ASSIGN_OR_RETURN(m->text_tokens_in_attention,
                   core::GetIntInRange(j, p, "text_tokens_in_attention", 0, kMaxDim));
  return core::Status::Ok();
}

core::Status ReadLatent(const core::Json& j, AnalyticModel* m) {
  const std::string p = "latent";
  RETURN_IF_ERROR(
      core::CheckKnownKeys(j, p, {"channels", "vae_spatial", "pixels_per_token", "frame_div"}));
  ASSIGN_OR_RETURN(m->latent_channels, core::GetIntInRange(j, p, "channels", 1, 65536));
  ASSIGN_OR_RETURN(m->vae_spatial, core::GetIntInRange(j, p, "vae_spatial", 1, 1024));
  ASSIGN_OR_RETURN(m->pixels_per_token, core::GetIntInRange(j, p, "pixels_per_token", 1, 1024));
  ASSIGN_OR_RETURN(m->frame_div, core::GetIntInRange(j, p, "frame_div", 1, 1024));
  return core::Status::Ok();
}

core::Status ReadVae(const core::Json& j, AnalyticModel* m) {
  const std::string p = "vae";
  RETURN_IF_ERROR(core::CheckKnownKeys(j, p, {"params", "up_blocks"}));
  ASSIGN_OR_RETURN(m->vae_params, core::GetDoubleInRange(j, p, "params", 1, kMaxParams));
  ASSIGN_OR_RETURN(const core::Json* blocks, core::Member(j, p, "up_blocks"));
  if (!blocks->is_array() || blocks->empty() || blocks->size() > 64) {
    return core::InvalidArgument(p + ".up_blocks: got " + core::ShowJson(*blocks) +
                                 ", must be an array of 1 to 64 blocks");
  }
  for (size_t i = 0; i < blocks->size(); ++i) {
    const core::Json& b = (*blocks)[i];
    const std::string bp = p + ".up_blocks[" + std::to_string(i) + "]";
    if (!b.is_object()) {
      return core::InvalidArgument(bp + ": got " + core::ShowJson(b) + ", must be an object");
    }
    RETURN_IF_ERROR(core::CheckKnownKeys(b, bp, {"channels", "spatial_div", "time_div"}));
    VaeUpBlock v;
    ASSIGN_OR_RETURN(v.channels, core::GetIntInRange(b, bp, "channels", 1, 65536));
    ASSIGN_OR_RETURN(v.spatial_div, core::GetIntInRange(b, bp, "spatial_div", 1, 1024));
    ASSIGN_OR_RETURN(v.time_div, core::GetIntInRange(b, bp, "time_div", 1, 1024));
    m->vae.push_back(v);
  }
  return core::Status::Ok();
}

core::StatusOr<AnalyticModel> ReadModel(const std::string& name) {
  ASSIGN_OR_RETURN(models::ModelPreset preset, models::LoadModelPreset(name, "diffusion-pipeline"));
  auto read = [&]() -> core::StatusOr<AnalyticModel> {
    AnalyticModel m;
    m.name = preset.name;
    ASSIGN_OR_RETURN(const core::Json* enc, models::PresetSection(preset, "text_encoder"));
    RETURN_IF_ERROR(ReadEncoder(*enc, &m));
    ASSIGN_OR_RETURN(const core::Json* dit, models::PresetSection(preset, "transformer"));
    RETURN_IF_ERROR(ReadTransformer(*dit, &m));
    ASSIGN_OR_RETURN(const core::Json* latent, models::PresetSection(preset, "latent"));
    RETURN_IF_ERROR(ReadLatent(*latent, &m));
    ASSIGN_OR_RETURN(const core::Json* vae, models::PresetSection(preset, "vae"));
    RETURN_IF_ERROR(ReadVae(*vae, &m));
    ASSIGN_OR_RETURN(const core::Json* cfg, core::Member(preset.json, "", "default_cfg"));
    if (!cfg->is_boolean()) {
      return core::InvalidArgument("default_cfg: got " + core::ShowJson(*cfg) +
                                   ", must be true or false");
    }
    m.default_cfg = cfg->get<bool>();
    return m;
  };
  auto m = read();
  if (!m.ok() && m.status().message().find(preset.origin) == std::string::npos) {
    return m.status().WithPrefix(preset.origin);
  }
  return m;
}

}  // namespace

std::vector<std::string> AnalyticModelNames() { return {"flux2-dev", "cogvideox-5b", "ltx-2"}; }

core::StatusOr<const AnalyticModel*> LoadAnalyticModel(const std::string& name) {
  // Read once: the analytic traces are built many times in a planner's search.
  static const std::map<std::string, core::StatusOr<std::shared_ptr<const AnalyticModel>>> kModels =
      [] {
        std::map<std::string, core::StatusOr<std::shared_ptr<const AnalyticModel>>> out;
        for (const std::string& n : AnalyticModelNames()) {
          auto m = ReadModel(n);
          if (m.ok()) {
            out.emplace(n, std::make_shared<const AnalyticModel>(std::move(*m)));
          } else {
            out.emplace(n, m.status());
          }
        }
        return out;
      }();
  auto it = kModels.find(name);
  if (it == kModels.end()) {
    return core::NotFound("analytic model '" + name + "' is not known");
  }
  if (!it->second.ok()) return it->second.status();
  return it->second->get();
}

}  // namespace tessera::xema
