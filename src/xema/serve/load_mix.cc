#include "xema/serve/load_mix.h"

#include <fmt/format.h>

#include <optional>

#include "xema/analytic_trace.h"
#include "xema/serve/modeled_device.h"
#include "xema/serve/request_json.h"
#include "xema/serve/serve_device.h"

namespace tessera::xema {

core::StatusOr<std::vector<LoadTemplate>> MixFromJson(const core::Json& j,
                                                      const std::string& source, MixModels models) {
  if (!j.is_array() || j.empty() || j.size() > kMaxMixTemplates) {
    return core::InvalidArgument(fmt::format(
        "{}: got {}, must be an array of 1 to {} templates like [{{\"model\": \"tiny-t2i\", "
        "\"size\": \"64x64\", \"steps\": 4, \"weight\": 1}}]",
        source, core::ShowJson(j), kMaxMixTemplates));
  }
  std::vector<LoadTemplate> mix;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string path = fmt::format("{}: mix[{}]", source, i);
    const core::Json& e = j[i];
    RETURN_IF_ERROR(
        core::CheckKnownKeys(e, path, {"model", "size", "frames", "steps", "guidance", "weight"}));
    LoadTemplate t;
    DiffusionRequest& r = t.request;
    ASSIGN_OR_RETURN(r.model, core::GetString(e, path, "model"));
    std::optional<TinyModelSpec> spec;
    bool default_cfg = true;
    if (models == MixModels::kTiny) {
      auto tiny = TinyModel(r.model);
      if (!tiny.ok()) return tiny.status().WithPrefix(path + ".model");
      spec = *tiny;
      t.video = spec->video;
    } else {
      auto info = FindAnalyticModel(r.model);
      if (!info.ok()) {
        return core::InvalidArgument(fmt::format("{}.model: got '{}', must be one of {}", path,
                                                 r.model, fmt::join(AnalyticModelNames(), ", ")));
      }
      t.video = info->video;
      default_cfg = info->default_cfg;
      if (t.video && !e.contains("frames")) {
        return core::InvalidArgument(path + ".frames: required for the video model " + r.model);
      }
    }
    if (e.contains("size")) {
      ASSIGN_OR_RETURN(const std::string size, core::GetString(e, path, "size"));
      RETURN_IF_ERROR(ParseSize(size, path + ".size", &r.width, &r.height));
    }
    r.frames = t.video ? 5 : 1;
    if (e.contains("frames")) {
      ASSIGN_OR_RETURN(r.frames, core::GetIntInRange(e, path, "frames", 1, kMaxRequestFrames));
    }
    if (e.contains("steps")) {
      ASSIGN_OR_RETURN(r.steps, core::GetIntInRange(e, path, "steps", 1, kMaxServeSteps));
    }
    double guidance = default_cfg ? 4.0 : 1.0;
    if (e.contains("guidance")) {
      ASSIGN_OR_RETURN(guidance, core::GetDoubleInRange(e, path, "guidance", 0, kMaxGuidance));
    }
    r.guidance = static_cast<float>(guidance);
    r.cfg = guidance > 1.0;
    if (e.contains("weight")) {
      ASSIGN_OR_RETURN(t.weight, core::GetPositiveDouble(e, path, "weight"));
    }
    if (spec) {
      RETURN_IF_ERROR(ValidateRequest(*spec, r).WithPrefix(path));
    } else {
      RETURN_IF_ERROR(ValidateModeledTemplate(r, 1).WithPrefix(path));
    }
    t.label = TemplateKeyString(r);
    mix.push_back(std::move(t));
  }
  return mix;
}

core::StatusOr<std::vector<LoadTemplate>> ReadMix(const std::string& spec, MixModels models) {
  const size_t first = spec.find_first_not_of(" \t\n");
  if (first != std::string::npos && spec[first] == '[') {
    ASSIGN_OR_RETURN(const core::Json j, core::ParseJson(spec, "mix"));
    return MixFromJson(j, "mix", models);
  }
  ASSIGN_OR_RETURN(const core::Json j, core::ReadJsonFile(spec));
  return MixFromJson(j, spec, models);
}

std::string RequestBody(const LoadTemplate& t, uint64_t seed) {
  const DiffusionRequest& r = t.request;
  core::Json j = {{"model", r.model},
                  {"prompt", r.prompt},
                  {"size", fmt::format("{}x{}", r.width, r.height)},
                  {"num_inference_steps", r.steps},
                  {"guidance_scale", r.guidance},
                  {"seed", seed & 0x7fffffffffffffffULL},
                  {"response_format", "none"}};
  if (t.video) j["frames"] = r.frames;
  return j.dump();
}

serve::LoadRequest MixSource::Request(size_t t, uint64_t seed) const {
  const LoadTemplate& m = mix_[t];
  return {GenerationRoute(m.video ? GenerationKind::kVideo : GenerationKind::kImage),
          RequestBody(m, seed)};
}

}  // namespace tessera::xema
