// The body of a generation request (OpenAI-style JSON) -> a DiffusionRequest and the reply
// options. Routes and their fields:
//
//   POST /v1/images/generations  {"model": "tiny-t2i", "prompt": "...", "size": "64x64",
//                                 "num_inference_steps": 4, "guidance_scale": 4.0, "seed": 1,
//                                 "response_format": "b64_json" | "none", "deadline_s": 2.5}
//   POST /v1/videos/generations  the same plus "frames": 5 (4k + 1), model "tiny-t2v".
//
// Required: model (a preset name, never a file: a client cannot make the server read a
// path) and prompt (1..kMaxPromptBytes bytes). Optional with defaults: size "64x64" (pixels,
// "WxH", each side a positive multiple of 16 up to kMaxRequestPixels), num_inference_steps 4
// ([1, kMaxServeSteps]), guidance_scale 4.0 (finite, [0, kMaxGuidance]; classifier-free
// guidance runs when it is > 1, as in diffusers), seed 1 ([0, 2^63 - 1]), response_format
// "b64_json", frames 1 for images / 5 for videos, deadline_s none ((0, kMaxDeadlineS]
// seconds: a request still queued after that long is answered 503 when a device takes it).
//
// Errors: InvalidArgument naming the field, the value and what is allowed, e.g.
// `size: got '70x64', each side must be a positive multiple of 16 up to 2048`; unknown keys
// and malformed JSON are refused. Never throws. Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema {

enum class GenerationKind { kImage, kVideo };

inline constexpr int64_t kMaxServeSteps = 200;
inline constexpr double kMaxDeadlineS = 3600;

struct GenerationRequest {
  GenerationKind kind = GenerationKind::kImage;
  DiffusionRequest request;   // validated against its model's spec
  bool return_images = true;  // response_format "b64_json"; false: "none"
  double deadline_s = 0;      // 0: none
};

// The route of a kind: "/v1/images/generations" or "/v1/videos/generations".
const char* GenerationRoute(GenerationKind kind);

core::StatusOr<GenerationRequest> ParseGenerationRequest(const std::string& body,
                                                         GenerationKind kind);

// A warm-up list (ServerOptions::warm_up): a JSON array of generation bodies as POSTed (a body
// with "frames" is a video request), each parsed by ParseGenerationRequest. InvalidArgument
// "SOURCE: warm_up[i]: ..." naming the first bad body, or when `j` is not an array.
core::StatusOr<std::vector<DiffusionRequest>> WarmUpFromJson(const core::Json& j,
                                                             const std::string& source);

// "WxH" with decimal sides in [1, kMaxRequestPixels]; InvalidArgument naming `field`.
core::Status ParseSize(const std::string& text, const std::string& field, int64_t* width,
                       int64_t* height);

}  // namespace tessera::xema
