// TextEncoder: a small seeded transformer that turns a prompt into text tokens for the DiT
// (tiny_dit.h), every tensor allocated through a runtime::DeviceAllocator.
//
// Tokenizer: words are maximal runs of ASCII letters and digits, lowercased; each word's
// FNV-1a 64-bit hash gives the id 1 + hash % (vocab - 1); id 0 is the pad id. The first
// `tokens` words are kept and the rest of the `tokens` positions are pads (an empty prompt is
// all pads).
// Model (hidden Hd, H heads, FFN F, L layers; LayerNorm without affine parameters):
//   x = E[id] + pos(t)                          E (vocab, Hd), pos: sinusoidal (max period 1e4)
//   per layer (pre-LN): a = Attn(LN(x) W_qkv + b_qkv);  x += a W_o + b_o
//                       x += GELU(LN(x) W_1 + b_1) W_2 + b_2
//   tokens = LN(x) (T, Hd);  pooled = mean of tokens over the non-pad positions (0 if none).
// Attention is the fused kernel (kernels::AttentionForward) over all T positions, pads
// included (no mask). Weights are stored (in, out) row-major; W ~ N(0, 1 / fan_in), E ~
// N(0, 1), biases 0, drawn from core::Rng(seed).Fork(tensor).
//
// Memory: weights "text.embed" (vocab, Hd) and one tensor per layer "text.layer<l>"; Encode
// opens the ops "<prefix>.embed", "<prefix>.layer<l>" and "<prefix>.final" with the given
// context, keeps the residual stream "<prefix>.h" (T, Hd) from embed to final, allocates each
// layer's temporaries as workspaces freed in that layer's op, and returns "<prefix>.tokens"
// (T, Hd) and "<prefix>.pooled" (Hd) as activations.
// Errors: Create validates the config (InvalidArgument naming the field); out of device memory
// (Infeasible) passes out of Create and Encode with nothing leaked.
// Thread-safety: Encode is const; one thread per allocator.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "runtime/device_allocator.h"
#include "runtime/op_scope.h"

namespace tessera::models {

struct TextEncoderConfig {
  int64_t vocab = 4096;
  int64_t tokens = 77;  // T: sequence length after padding
  int64_t hidden = 256;
  int64_t num_heads = 4;
  int64_t num_layers = 4;
  int64_t ffn_hidden = 1024;
  float layer_norm_eps = 1e-5f;
};

// InvalidArgument naming the field: vocab in [2, 2^20], tokens in [1, 4096], hidden, ffn_hidden
// in [1, 2^16], num_layers in [1, 64], num_heads >= 1 dividing hidden, eps positive and finite.
[[nodiscard]] core::Status ValidateTextEncoderConfig(const TextEncoderConfig& config);

// Writes config.tokens ids (ids.size() must equal config.tokens) and returns the number of
// non-pad ids. Allocates nothing.
int64_t Tokenize(std::string_view prompt, const TextEncoderConfig& config, std::span<int32_t> ids);

class TextEncoder {
 public:
  static core::StatusOr<TextEncoder> Create(const TextEncoderConfig& config, uint64_t seed,
                                            runtime::DeviceAllocator& allocator);

  const TextEncoderConfig& config() const { return config_; }
  // Aligned bytes of the weight tensors.
  int64_t WeightBytes() const;
  // The weight tensors ("text.embed", then "text.layer<l>"), which the host tier frees while
  // they are idle and restores (offload.idle_weights); Encode needs them allocated.
  std::vector<runtime::DeviceTensor*> WeightTensors() {
    std::vector<runtime::DeviceTensor*> w{&embed_};
    for (runtime::DeviceTensor& l : layers_) w.push_back(&l);
    return w;
  }

  [[nodiscard]] core::Status Encode(runtime::DeviceAllocator& allocator, std::string_view prompt,
                                    const std::string& prefix, const runtime::OpContext& context,
                                    runtime::DeviceTensor* tokens,
                                    runtime::DeviceTensor* pooled) const;

 private:
  struct LayerOffsets {
    int64_t w_qkv, b_qkv, w_o, b_o, w_1, b_1, w_2, b_2, size;
  };
  explicit TextEncoder(const TextEncoderConfig& config);

  TextEncoderConfig config_;
  LayerOffsets off_{};
  runtime::DeviceTensor embed_;
  std::vector<runtime::DeviceTensor> layers_;
};

}  // namespace tessera::models
