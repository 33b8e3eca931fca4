#include "xema/serve/request_json.h"

#include <fmt/format.h>

#include <limits>

#include "core/json_util.h"
#include "core/parse_number.h"
#include "serve/reply.h"

namespace tessera::xema {
namespace {

std::string Quote(const std::string& s) { return serve::QuoteValue(s); }

// ValidateRequest names DiffusionRequest fields; a client knows the JSON field.
core::Status Renamed(const core::Status& s) {
  if (s.ok()) return s;
  const std::string& m = s.message();
  for (const auto& [from, to] : {std::pair<const char*, const char*>{"request.width", "size"},
                                 {"request.height", "size"},
                                 {"request.frames", "frames"},
                                 {"request.steps", "num_inference_steps"},
                                 {"request.guidance", "guidance_scale"},
                                 {"request.prompt", "prompt"},
                                 {"request.model", "model"}}) {
    if (m.rfind(from, 0) == 0) return core::InvalidArgument(std::string(to) + ": " + m);
  }
  return s;
}

}  // namespace

const char* GenerationRoute(GenerationKind kind) {
  return kind == GenerationKind::kImage ? "/v1/images/generations" : "/v1/videos/generations";
}

core::Status ParseSize(const std::string& text, const std::string& field, int64_t* width,
                       int64_t* height) {
  const size_t x = text.find('x');
  auto bad = [&] {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be WxH in pixels with each side in [1, {}] (e.g. 64x64)",
                    field, Quote(text), kMaxRequestPixels));
  };
  // Digits and one 'x' only: ParseInteger alone would take "+64x+64".
  if (x == std::string::npos || text.size() > 16 ||
      text.find_first_not_of("0123456789x") != std::string::npos) {
    return bad();
  }
  auto w = core::ParseInteger(text.substr(0, x), 1, kMaxRequestPixels);
  auto h = core::ParseInteger(text.substr(x + 1), 1, kMaxRequestPixels);
  if (!w.ok() || !h.ok()) return bad();
  *width = *w;
  *height = *h;
  return core::Status::Ok();
}

core::StatusOr<std::vector<DiffusionRequest>> WarmUpFromJson(const core::Json& j,
                                                             const std::string& source) {
  if (!j.is_array()) {
    return core::InvalidArgument(
        fmt::format("{}: warm-up list: got {}, must be an array of generation bodies", source,
                    core::ShowJson(j)));
  }
  std::vector<DiffusionRequest> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const GenerationKind kind = j[i].is_object() && j[i].contains("frames")
                                    ? GenerationKind::kVideo
                                    : GenerationKind::kImage;
    auto g = ParseGenerationRequest(j[i].dump(), kind);
    if (!g.ok()) return g.status().WithPrefix(fmt::format("{}: warm_up[{}]", source, i));
    out.push_back(std::move(g->request));
  }
  return out;
}

core::StatusOr<GenerationRequest> ParseGenerationRequest(const std::string& body,
                                                         GenerationKind kind) {
  ASSIGN_OR_RETURN(const core::Json j, core::ParseJson(body, "body"));
  const bool video = kind == GenerationKind::kVideo;
  if (video) {
    RETURN_IF_ERROR(
        core::CheckKnownKeys(j, "body",
                             {"model", "prompt", "size", "frames", "num_inference_steps",
                              "guidance_scale", "seed", "response_format", "deadline_s"}));
  } else {
    RETURN_IF_ERROR(
        core::CheckKnownKeys(j, "body",
                             {"model", "prompt", "size", "num_inference_steps", "guidance_scale",
                              "seed", "response_format", "deadline_s"}));
  }
  GenerationRequest g;
  g.kind = kind;
  DiffusionRequest& r = g.request;

  ASSIGN_OR_RETURN(r.model, core::GetString(j, "", "model"));
  auto spec = TinyModel(r.model);
  if (!spec.ok()) {
    return core::InvalidArgument(
        fmt::format("model: got {}, must be one of tiny-t2i, tiny-t2v", Quote(r.model)));
  }
  if (spec->video != video) {
    return core::InvalidArgument(fmt::format(
        "model: got {}, {} needs {} model (e.g. {})", Quote(r.model), GenerationRoute(kind),
        video ? "a video" : "an image", video ? "tiny-t2v" : "tiny-t2i"));
  }
  ASSIGN_OR_RETURN(r.prompt, core::GetString(j, "", "prompt"));
  if (r.prompt.empty() || static_cast<int64_t>(r.prompt.size()) > kMaxPromptBytes) {
    return core::InvalidArgument(fmt::format("prompt: got {} bytes, must be 1 to {} bytes",
                                             r.prompt.size(), kMaxPromptBytes));
  }
  if (j.contains("size")) {
    ASSIGN_OR_RETURN(const std::string size, core::GetString(j, "", "size"));
    RETURN_IF_ERROR(ParseSize(size, "size", &r.width, &r.height));
  }
  r.frames = video ? 5 : 1;
  if (video && j.contains("frames")) {
    ASSIGN_OR_RETURN(r.frames, core::GetIntInRange(j, "", "frames", 1, kMaxRequestFrames));
  }
  r.steps = 4;
  if (j.contains("num_inference_steps")) {
    ASSIGN_OR_RETURN(r.steps, core::GetIntInRange(j, "", "num_inference_steps", 1, kMaxServeSteps));
  }
  double guidance = 4.0;
  if (j.contains("guidance_scale")) {
    ASSIGN_OR_RETURN(guidance, core::GetDoubleInRange(j, "", "guidance_scale", 0, kMaxGuidance));
  }
  r.guidance = static_cast<float>(guidance);
  r.cfg = guidance > 1.0;
  if (j.contains("seed")) {
    ASSIGN_OR_RETURN(const int64_t seed,
                     core::GetIntInRange(j, "", "seed", 0, std::numeric_limits<int64_t>::max()));
    r.seed = static_cast<uint64_t>(seed);
  }
  if (j.contains("response_format")) {
    ASSIGN_OR_RETURN(const std::string format, core::GetString(j, "", "response_format"));
    if (format != "b64_json" && format != "none") {
      return core::InvalidArgument(
          fmt::format("response_format: got {}, must be b64_json or none", Quote(format)));
    }
    g.return_images = format == "b64_json";
  }
  if (j.contains("deadline_s")) {
    ASSIGN_OR_RETURN(g.deadline_s, core::GetDoubleInRange(j, "", "deadline_s", 0, kMaxDeadlineS));
    if (g.deadline_s <= 0) {
      return core::InvalidArgument(
          fmt::format("deadline_s: got 0, must be in (0, {}] seconds", kMaxDeadlineS));
    }
  }
  RETURN_IF_ERROR(Renamed(ValidateRequest(*spec, r)));
  return g;
}

}  // namespace tessera::xema
