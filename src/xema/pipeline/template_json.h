// JSON of a request template and of its mitigation settings, shared by every file that stores
// plans (xema mitigate --json, the serving plan table, the mitigation plan table):
//   template     {"model", "width", "height", "frames", "steps", "cfg"}
//   mitigations  {"ffn_chunks", "attention_chunks", "vae_frame_slices", "vae_tiles",
//                 "offload": [text, latent, image, weights]}
// Readers set only their fields of `*request` and name the path and field of any bad value
// (InvalidArgument). MitigationsFromJson turns attention to kChunked when attention_chunks > 1
// (a template does not record the attention mode; chunks need it). Thread-safety: pure.
#pragma once

#include <string>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema {

core::Json TemplateToJson(const DiffusionRequest& request);
core::Status TemplateFromJson(const core::Json& j, const std::string& path,
                              DiffusionRequest* request);

core::Json MitigationsToJson(const DiffusionRequest& request);
core::Status MitigationsFromJson(const core::Json& j, const std::string& path,
                                 DiffusionRequest* request);

}  // namespace tessera::xema
