// Generate: autoregressive decoding of one sequence with a LlamaModel and a CoreAttention (the
// local KV cache or a disaggregated one).
//
// The prompt is prefilled in chunks of at most kPrefillChunkTokens tokens (one Forward each,
// last-row logits only for the final chunk); then the sampled token is fed back one token per
// step. Step s (0-based) samples new token s from the logits of the previous position: the
// prompt's last token for step 0. Sampling: SamplingOptions.temperature 0 is greedy, > 0 draws
// with core::Rng(seed) (sampler.h), so a (model, prompt, options) triple always gives the same
// tokens. With stop_at_eos, generation stops after the model's eos_id is sampled; that EOS is
// the last returned token. The optional callback sees (step, token, logits of that step: V
// floats, valid during the call) after each sample, before the next Forward.
//
// `attn` must hold no positions of this sequence (a fresh or Reset cache): the prompt goes at
// positions [0, prompt size).
// Errors (InvalidArgument, before any Forward): max_new_tokens < 1 ("max_tokens: got 0, must be
// >= 1"), an empty prompt, prompt + max_new_tokens > max_context (naming both numbers), a
// temperature that is negative or not finite, a prompt token outside the vocabulary; a Forward
// error is returned as it is.
// Thread-safety: one call per (attn, sequence); the model may be shared.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "models/core_attention.h"
#include "models/llama.h"

namespace tessera::models {

inline constexpr int64_t kPrefillChunkTokens = 512;

struct SamplingOptions {
  double temperature = 0.0;  // 0: greedy
  uint64_t seed = 0;
  bool stop_at_eos = true;
};

using GenerateCallback =
    std::function<void(int64_t step, int32_t token, std::span<const float> logits)>;

core::StatusOr<std::vector<int32_t>> Generate(const LlamaModel& model, CoreAttention& attn,
                                              std::span<const int32_t> prompt,
                                              int64_t max_new_tokens,
                                              const SamplingOptions& options,
                                              const GenerateCallback& callback = nullptr);

}  // namespace tessera::models
