// LlamaConfig: the shape of a Llama-architecture decoder (Llama 2/3.x: RMSNorm, RoPE, SwiGLU,
// grouped-query attention, no biases), its presets, and its Hugging Face config.json form.
//
// Units and shapes: sizes are element counts; d = hidden, H = num_heads, Hkv = num_kv_heads,
// D = head_dim (H * D need not equal d), F = ffn_hidden, V = vocab, L = num_layers. Positions
// run over [0, max_context). rope_theta is the RoPE base; rope_scaling, when set, is Llama 3.1's
// "llama3" frequency adjustment (RopeInvFreq below). Token ids bos_id / eos_id are in [0, V).
//
// Presets (LlamaPreset): "tiny-mha" and "tiny-gqa" are small byte-vocabulary models (vocab 259,
// byte_tokenizer.h) that run on a CPU; "llama-3.1-8b" and "llama-3.1-70b" are shape_only: their
// published shapes, for the cost model; LlamaModel::FromSeed refuses them.
//
// config.json (FromHfConfigJson): the keys of a Hugging Face LlamaForCausalLM config:
// hidden_size, intermediate_size, num_attention_heads, num_key_value_heads (default: heads),
// num_hidden_layers, vocab_size, max_position_embeddings, rms_norm_eps, rope_theta (default
// 10000), tie_word_embeddings (default false), head_dim (default hidden / heads), rope_scaling
// (null, or {"rope_type" | "type": "llama3", factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings}), bos_token_id / eos_token_id (an int or a list: the first
// is taken), "_name_or_path" (the name, optional). Other keys are ignored. Messages read
// "config.json: <key>: got <value>, must be ...".
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::models {

// Llama 3.1's "llama3" RoPE frequency adjustment.
struct LlamaRopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct LlamaConfig {
  std::string name;
  int64_t vocab = 0;
  int64_t hidden = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t ffn_hidden = 0;
  int64_t max_context = 0;
  double rope_theta = 500000.0;
  std::optional<LlamaRopeScaling> rope_scaling;
  double rms_eps = 1e-5;
  bool tie_embeddings = false;
  int32_t bos_id = 0;
  int32_t eos_id = 0;
  // A published shape without weights (cost model only); never serialised.
  bool shape_only = false;

  // InvalidArgument naming the field, the value and what is allowed: sizes >= 1 (and small
  // enough that every weight matrix has < 2^31 rows and columns), head_dim even, num_kv_heads
  // dividing num_heads, bos/eos in [0, vocab), rope_theta and rms_eps finite and > 0, rope
  // scaling factor >= 1, 0 < low_freq_factor < high_freq_factor, original positions >= 1.
  [[nodiscard]] core::Status Validate() const;
  // K and V bytes per token over all layers: 2 * L * Hkv * D * dtype_bytes.
  int64_t KvBytesPerToken(int64_t dtype_bytes) const;
  // Number of weights: embedding, per layer 2 norms + q/k/v/o + gate/up/down, final norm, and
  // the LM head unless tied.
  int64_t ParamCount() const;
  // The D/2 RoPE inverse frequencies: theta^(-2i/D), adjusted by rope_scaling when set exactly
  // as Llama 3.1 defines it (wavelength 2 pi / f; f kept when the wavelength is below
  // original / high_freq_factor, divided by factor above original / low_freq_factor, and
  // interpolated with s = (original / wavelength - low) / (high - low) as (1 - s) f / factor +
  // s f in between).
  std::vector<double> RopeInvFreq() const;

  // Parses config.json text; `source` prefixes messages (e.g. the file's path).
  static core::StatusOr<LlamaConfig> FromHfConfigJson(const std::string& text,
                                                      const std::string& source = "config.json");
  // Reads and parses the file at `path` (messages prefixed with the path).
  static core::StatusOr<LlamaConfig> FromHfConfigFile(const std::string& path);
  // The config.json text (pretty-printed) a Hugging Face loader and FromHfConfigJson read.
  std::string ToHfConfigJson() const;
};

// The preset `name` (NotFound listing the names otherwise).
core::StatusOr<LlamaConfig> LlamaPreset(const std::string& name);
// "tiny-mha", "tiny-gqa", "llama-3.1-8b", "llama-3.1-70b".
std::vector<std::string> LlamaPresetNames();
// A preset name, or else a Hugging Face-style directory holding config.json (its errors name
// the file and field); NotFound naming the presets when it is neither.
core::StatusOr<LlamaConfig> LoadLlamaConfig(const std::string& preset_or_dir);

}  // namespace tessera::models
