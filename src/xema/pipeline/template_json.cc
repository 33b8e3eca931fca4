#include "xema/pipeline/template_json.h"

#include <fmt/format.h>

namespace tessera::xema {

core::Json TemplateToJson(const DiffusionRequest& r) {
  return {{"model", r.model},   {"width", r.width}, {"height", r.height},
          {"frames", r.frames}, {"steps", r.steps}, {"cfg", r.cfg}};
}

core::Status TemplateFromJson(const core::Json& t, const std::string& path, DiffusionRequest* r) {
  if (!t.is_object()) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be a template object", path, core::ShowJson(t)));
  }
  ASSIGN_OR_RETURN(r->model, core::GetString(t, path, "model"));
  ASSIGN_OR_RETURN(r->width, core::GetPositiveInt(t, path, "width"));
  ASSIGN_OR_RETURN(r->height, core::GetPositiveInt(t, path, "height"));
  ASSIGN_OR_RETURN(r->frames, core::GetPositiveInt(t, path, "frames"));
  ASSIGN_OR_RETURN(r->steps, core::GetPositiveInt(t, path, "steps"));
  ASSIGN_OR_RETURN(const core::Json* cfg, core::Member(t, path, "cfg"));
  if (!cfg->is_boolean()) {
    return core::InvalidArgument(
        fmt::format("{}.cfg: got {}, must be true or false", path, core::ShowJson(*cfg)));
  }
  r->cfg = cfg->get<bool>();
  return core::Status::Ok();
}

core::Json MitigationsToJson(const DiffusionRequest& r) {
  core::Json offload = core::Json::array();
  if (r.offload.text_context) offload.push_back("text");
  if (r.offload.latent) offload.push_back("latent");
  if (r.offload.image) offload.push_back("image");
  if (r.offload.idle_weights) offload.push_back("weights");
  return {{"ffn_chunks", r.ffn_chunks},
          {"attention_chunks", r.attention_chunks},
          {"vae_frame_slices", r.vae_frame_slices},
          {"vae_tiles", r.vae_tiles},
          {"offload", offload}};
}

core::Status MitigationsFromJson(const core::Json& m, const std::string& path,
                                 DiffusionRequest* r) {
  if (!m.is_object()) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be a mitigations object", path, core::ShowJson(m)));
  }
  ASSIGN_OR_RETURN(r->ffn_chunks, core::GetPositiveInt(m, path, "ffn_chunks"));
  ASSIGN_OR_RETURN(r->attention_chunks, core::GetPositiveInt(m, path, "attention_chunks"));
  ASSIGN_OR_RETURN(r->vae_frame_slices, core::GetPositiveInt(m, path, "vae_frame_slices"));
  ASSIGN_OR_RETURN(r->vae_tiles, core::GetPositiveInt(m, path, "vae_tiles"));
  ASSIGN_OR_RETURN(const core::Json* list, core::Member(m, path, "offload"));
  const std::string opath = core::JoinPath(path, "offload");
  if (!list->is_array()) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be an array of text, latent, image, weights", opath,
                    core::ShowJson(*list)));
  }
  r->offload = OffloadSet{};
  for (const core::Json& item : *list) {
    const std::string name = item.is_string() ? item.get<std::string>() : "";
    bool* flag = OffloadFlag(r->offload, name);
    if (flag == nullptr) {
      return core::InvalidArgument(fmt::format(
          "{}: got {}, items must be text, latent, image or weights", opath, core::ShowJson(item)));
    }
    *flag = true;
  }
  // A template does not record the attention mode; chunks need the materialised one.
  if (r->attention_chunks > 1) r->attention = models::AttentionMode::kChunked;
  return core::Status::Ok();
}

}  // namespace tessera::xema
