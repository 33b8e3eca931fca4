// LlamaModel: a Llama-architecture decoder (Llama 2/3.x) computed in fp32 on the CPU, with its
// weights from a seed, a preset or a Hugging Face style directory (config.json + safetensors in
// F32/BF16/F16, one file or shards listed by model.safetensors.index.json), so real Llama-3.x
// weights run (correctly, if slowly).
//
// Forward of T tokens at positions [pos0, pos0 + T) (x is (T, d); every linear is y = x W^T with
// W stored (out, in) as in Hugging Face):
//   x = embed[tokens]
//   per layer l:  a = RMSNorm(x) * attn_norm;  q = a Wq^T (T, H, D), RoPE(q)
//                 attn.BeginLayer(l, pos0, T, q)            (before k and v exist)
//                 k = a Wk^T, RoPE(k);  v = a Wv^T           (T, Hkv, D)
//                 attn.FinishLayer(l, k, v, o)              o (T, H, D)
//                 x += o Wo^T
//                 b = RMSNorm(x) * ffn_norm;  x += (silu(b Wg^T) * (b Wu^T)) Wd^T
//   logits = (RMSNorm(x) * final_norm) W_head^T             (W_head = embed when tied)
// RMSNorm(x) = x / sqrt(mean(x^2) + rms_eps) per row. RoPE follows Hugging Face's rotate_half
// convention: element i < D/2 of a head pairs with element i + D/2, rotated by the angle
// pos * f_i with f_i = LlamaConfig::RopeInvFreq()[i] (llama3 scaling included) rounded to
// fp32, the angle computed as an fp32 product (as Hugging Face does), cos and sin of it.
//
// Tensor names (Hugging Face): model.embed_tokens.weight (V, d);
// model.layers.{i}.input_layernorm.weight (d); .self_attn.{q,k,v,o}_proj.weight (H*D, d),
// (Hkv*D, d), (Hkv*D, d), (d, H*D); .post_attention_layernorm.weight (d);
// .mlp.{gate,up,down}_proj.weight (F, d), (F, d), (d, F); model.norm.weight (d);
// lm_head.weight (V, d), absent when tie_embeddings (ignored if present). Other tensors in a
// file (e.g. rotary inv_freq buffers) are ignored.
//
// Ownership: a LlamaModel owns its weights; it is movable, not copyable (weights can be GBs).
// Thread-safety: every const method is reentrant; several threads may run Forward on one model
// for different sequences (each with its own CoreAttention). Forward allocates its scratch once
// per call (not per layer); GEMMs run on kernels/gemm.h with the BLAS's threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/core_attention.h"
#include "models/llama_config.h"
#include "models/safetensors.h"

namespace tessera::models {

// One decoder layer's weights, row-major, shapes as in the header comment.
struct LlamaLayerWeights {
  std::vector<float> attn_norm;  // (d)
  std::vector<float> wq;         // (H*D, d)
  std::vector<float> wk;         // (Hkv*D, d)
  std::vector<float> wv;         // (Hkv*D, d)
  std::vector<float> wo;         // (d, H*D)
  std::vector<float> ffn_norm;   // (d)
  std::vector<float> w_gate;     // (F, d)
  std::vector<float> w_up;       // (F, d)
  std::vector<float> w_down;     // (d, F)
};

struct LlamaWeights {
  std::vector<float> embed;  // (V, d)
  std::vector<LlamaLayerWeights> layers;
  std::vector<float> final_norm;  // (d)
  std::vector<float> lm_head;     // (V, d); empty when tie_embeddings
};

class LlamaModel {
 public:
  // Seeded weights: every matrix N(0, init_std^2), norms = 1; the same config and seed give the
  // same weights. InvalidArgument for an invalid config or a shape_only preset (naming it).
  static core::StatusOr<LlamaModel> FromSeed(const LlamaConfig& config, uint64_t seed,
                                             float init_std = 0.02f);
  // Weights from named tensors (moved in); `source` names them in messages. Every missing tensor,
  // wrong shape or data size that does not match the shape is InvalidArgument naming the
  // source, the tensor, got and expected.
  static core::StatusOr<LlamaModel> FromTensors(const LlamaConfig& config, TensorMap tensors,
                                                const std::string& source);
  // A Hugging Face style directory: config.json, then model.safetensors if present, else the
  // shards that model.safetensors.index.json maps ("weight_map"). NotFound when neither exists.
  // The config's name is its "_name_or_path", else the directory's name.
  static core::StatusOr<LlamaModel> Load(const std::string& dir);
  // A preset name (LlamaPresetNames(): seeded weights) or a directory (Load; seed unused).
  static core::StatusOr<LlamaModel> Open(const std::string& preset_or_dir, uint64_t seed);

  LlamaModel(LlamaModel&&) = default;
  LlamaModel& operator=(LlamaModel&&) = default;
  LlamaModel(const LlamaModel&) = delete;
  LlamaModel& operator=(const LlamaModel&) = delete;

  // Writes dir/config.json and dir/model.safetensors (weights in `dtype`), creating dir.
  [[nodiscard]] core::Status Save(const std::string& dir, TensorDtype dtype) const;
  // The weights as Hugging Face named tensors (a copy).
  TensorMap ToTensors() const;

  const LlamaConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return weights_; }
  // 16 lower-case hex digits: a 64-bit FNV-1a-style hash over the config's shape fields (not its
  // name) and every weight's name, shape and fp32 bits. Computed once at construction.
  const std::string& Fingerprint() const { return fingerprint_; }

  // Runs `tokens` (T >= 1) at positions [pos0, pos0 + T) through the model, with the KV cache
  // behind `attn` (which must hold exactly pos0 positions of this sequence). Writes logits
  // (T, V) row-major, or only the last token's V logits when last_only. InvalidArgument for an
  // empty token list, a token outside [0, V), pos0 < 0 or pos0 + T > max_context (naming the
  // value); an error of `attn` is returned as it is.
  [[nodiscard]] core::Status Forward(std::span<const int32_t> tokens, int64_t pos0,
                                     CoreAttention& attn, float* logits, bool last_only) const;

 private:
  LlamaModel() = default;
  void ComputeFingerprint();

  LlamaConfig config_;
  LlamaWeights weights_;
  std::string fingerprint_;
};

// The Hugging Face tensor name of layer `layer`'s weight `suffix`, e.g.
// LlamaLayerTensorName(3, "self_attn.q_proj.weight") = "model.layers.3.self_attn.q_proj.weight".
std::string LlamaLayerTensorName(int64_t layer, const char* suffix);

}  // namespace tessera::models
