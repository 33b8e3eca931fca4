// DitModel: the shape of a Diffusion Transformer as the cost model and the engine see it.
// Sizes are element counts; bytes_per_elem is the training dtype width (2 for bf16).
// Presets are the "dit" model files (model_presets.h), e.g. data/models/wan2.1-1.3b.json: hidden
// 1536, 12 heads (head dim 128), 30 layers, FFN 8960, 512 text tokens for cross-attention.
// Plain value; thread-safe to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::models {

struct DitModel {
  std::string name;
  int hidden = 0;
  int heads = 0;
  int layers = 0;
  int ffn = 0;
  int text_tokens = 0;
  int bytes_per_elem = 2;

  int head_dim() const { return hidden / heads; }
  // K and V of one token, all heads: 2 * hidden * bytes_per_elem.
  double kv_bytes_per_token() const { return 2.0 * hidden * bytes_per_elem; }
  // Parameters of the transformer blocks: self-attn 4d^2, cross-attn 4d^2, FFN 2dF
  // (wan2.1-1.3b: 1.39e9).
  double params() const;
};

// Plausible ranges (every real DiT sits well inside them); each JSON field is checked against
// its range before it is narrowed to int, and the products the cost models form (hidden^2 x
// layers, tokens x hidden) stay far from overflow.
inline constexpr int64_t kMaxModelHidden = int64_t{1} << 20;
inline constexpr int64_t kMaxModelHeads = 4096;
inline constexpr int64_t kMaxModelLayers = 1024;
inline constexpr int64_t kMaxModelFfn = int64_t{1} << 22;
inline constexpr int64_t kMaxModelTextTokens = int64_t{1} << 24;
inline constexpr int64_t kMaxModelBytesPerElem = 8;

// Every size >= 1 (text_tokens >= 0) and within the ranges above; heads divides hidden.
core::Status Validate(const DitModel& m);
core::Json ToJson(const DitModel& m);
core::StatusOr<DitModel> DitModelFromJson(const core::Json& j, const std::string& source);
std::vector<std::string> DitModelPresetNames();
core::StatusOr<DitModel> DitModelPreset(const std::string& name);
// A preset name, or else a path to a model JSON file.
core::StatusOr<DitModel> LoadDitModel(const std::string& name_or_path);

}  // namespace tessera::models
