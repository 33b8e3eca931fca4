// A tiny diffusion model described in a JSON file, for `--model FILE`: one of the presets
// (tiny_pipeline.h) with some sizes changed, so users can trace a pipeline shaped like theirs.
//
//   {"format": "tessera.xema.model/1",
//    "name": "my-t2v",                  // the trace key's model; not a preset name
//    "base": "tiny-t2v",                // tiny-t2i or tiny-t2v
//    "seed": 7,                         // optional: every weight is drawn from it
//    "dit":  {"hidden": 384, "num_heads": 6, "num_layers": 6, "ffn_hidden": 1536},
//    "text": {"hidden": 256, "num_heads": 4, "num_layers": 4, "ffn_hidden": 1024,
//             "vocab": 4096, "tokens": 77},
//    "vae":  {"channels": [128, 128, 64, 32]}}
// Every member but format, name and base is optional (the base's value stays); every key is
// checked (an unknown one is refused). The VAE's spatial factor follows from its channel list
// (2^(blocks - 1)); the DiT's input channels from the latent channels and patch. The result
// passes ValidateSpec, else its message names the field.
// Thread-safety: reentrant.
#pragma once

#include <string>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema {

inline constexpr const char* kModelFormat = "tessera.xema.model/1";

// Messages are prefixed with `source` (a file name).
core::StatusOr<TinyModelSpec> TinyModelFromJson(const core::Json& j, const std::string& source);
core::StatusOr<TinyModelSpec> ReadTinyModelFile(const std::string& path);

// A preset name, or else a model file: NotFound naming both when `name_or_path` is neither.
core::StatusOr<TinyModelSpec> ResolveTinyModel(const std::string& name_or_path);

}  // namespace tessera::xema
