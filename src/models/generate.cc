#include "models/generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"
#include "models/sampler.h"

namespace tessera::models {
namespace {

core::Status CheckGenerateArgs(const LlamaConfig& c, std::span<const int32_t> prompt,
                               int64_t max_new_tokens, const SamplingOptions& options) {
  if (max_new_tokens < 1) {
    return core::InvalidArgument(fmt::format("max_tokens: got {}, must be >= 1", max_new_tokens));
  }
  if (prompt.empty()) {
    return core::InvalidArgument("prompt: got 0 tokens, must hold at least 1");
  }
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (max_new_tokens > c.max_context || n + max_new_tokens > c.max_context) {
    return core::InvalidArgument(
        fmt::format("prompt: got {} tokens + max_tokens {}, must total <= max_context {} of {}", n,
                    max_new_tokens, c.max_context, c.name));
  }
  if (!std::isfinite(options.temperature) || options.temperature < 0.0) {
    return core::InvalidArgument(
        fmt::format("temperature: got {}, must be finite and >= 0", options.temperature));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (prompt[i] < 0 || prompt[i] >= c.vocab) {
      return core::InvalidArgument(
          fmt::format("prompt[{}]: got token {}, must be in [0, {})", i, prompt[i], c.vocab));
    }
  }
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<std::vector<int32_t>> Generate(const LlamaModel& model, CoreAttention& attn,
                                              std::span<const int32_t> prompt,
                                              int64_t max_new_tokens,
                                              const SamplingOptions& options,
                                              const GenerateCallback& callback) {
  const LlamaConfig& c = model.config();
  RETURN_IF_ERROR(CheckGenerateArgs(c, prompt, max_new_tokens, options));
  const int64_t n = static_cast<int64_t>(prompt.size());
  std::vector<float> logits(c.vocab);
  for (int64_t start = 0; start < n; start += kPrefillChunkTokens) {
    const int64_t len = std::min(kPrefillChunkTokens, n - start);
    RETURN_IF_ERROR(model.Forward(prompt.subspan(start, len), start, attn, logits.data(),
                                  /*last_only=*/true));
  }
  core::Rng rng(options.seed);
  std::vector<int32_t> out;
  out.reserve(max_new_tokens);
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    if (step > 0) {
      RETURN_IF_ERROR(model.Forward(std::span(&out.back(), 1), n + step - 1, attn, logits.data(),
                                    /*last_only=*/true));
    }
    const int32_t token = SampleTemperature(logits, options.temperature, rng);
    out.push_back(token);
    if (callback) callback(step, token, logits);
    if (options.stop_at_eos && token == c.eos_id) break;
  }
  return out;
}

}  // namespace tessera::models
