// Transformer shapes for Compass's planner: presets of the paper's grid (Llama-2-7B/13B/70B,
// Llama-3-8B with grouped-query attention; their shapes are the "llm" model files of
// models/model_presets.h, data/models/<name>.json) or a JSON file, and the tensor-parallel
// operators of one Megatron layer with sequence parallelism at TP t over M tokens (M = seq x mbs),
// from the models layer's table (models/tp_layer_ops.h):
//   forward:  qkv (AG, K = h, N = (h + 2 kv_heads head_dim) / t), proj (RS, K = h/t, N = h),
//             fc1 (AG, K = h, N = g f / t), fc2 (RS, K = f/t, N = h)
//   backward: proj-dgrad (AG of dY, K = h, N = h/t), fc2-dgrad (AG, K = h, N = f/t),
//             qkv-dgrad (RS, K = qkv N, N = h), fc1-dgrad (RS, K = g f / t, N = h),
//             qkv-wgrad and fc1-wgrad (X gathered again, reduced over tokens: wgrad),
//             proj-wgrad and fc2-wgrad (use the dY gathered for their dgrad: GEMM only)
// with g = 2 for a gated (SwiGLU) MLP, else 1.
// Model file: {"kind": "compass-model", "version": 1, "name": ..., "hidden": ...,
// "ffn": ..., "heads": ..., "kv_heads": ..., "layers": ..., "gated_mlp": true|false}.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compass/tp_op.h"
#include "core/json_util.h"
#include "core/status.h"

namespace tessera::compass {

struct TransformerShape {
  std::string name;
  int64_t hidden = 0, ffn = 0, heads = 0, kv_heads = 0, layers = 0;
  bool gated_mlp = true;
  int64_t head_dim() const { return heads > 0 ? hidden / heads : 0; }
};

// "llama2-7b", "llama2-13b", "llama3-8b", "llama2-70b".
const std::vector<std::string>& ModelPresetNames();
// A preset name or a model file; NotFound / InvalidArgument naming the name, field and value.
core::StatusOr<TransformerShape> LoadTransformerShape(const std::string& name_or_path);
core::StatusOr<TransformerShape> TransformerShapeFromJson(const core::Json& j,
                                                          const std::string& where);

struct LayerOp {
  std::string name;  // "qkv", "proj-dgrad", "fc1-wgrad", ...
  TpOpShape shape;   // label "<name> <model>"
  // false: proj-wgrad and fc2-wgrad, which reuse the dY their dgrad gathered (GEMM only;
  // models::TpLayerOp::reuses_dgrad_gather).
  bool has_collective = true;
};

// InvalidArgument naming the field when t does not divide heads, kv_heads, hidden or ffn,
// or M is not divisible by t ("tokens: got 1001, must be a positive multiple of tp 8 ...").
core::StatusOr<std::vector<LayerOp>> LayerOps(const TransformerShape& m, int tp, int64_t tokens);

}  // namespace tessera::compass
