// Helpers shared by KernelFlume's tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "models/kv_cache.h"
#include "models/llama.h"
#include "models/sampler.h"

namespace tessera::kernelflume::testing {

// The monolithic model's n greedy tokens after `prompt` (models::LocalKvCache): what every
// disaggregated decode must reproduce.
inline std::vector<int32_t> MonolithicGreedy(const models::LlamaModel& model,
                                             const std::vector<int32_t>& prompt, int64_t n) {
  models::LocalKvCache cache(model.config(), static_cast<int64_t>(prompt.size()) + n);
  std::vector<float> logits(model.config().vocab);
  EXPECT_TRUE(model.Forward(prompt, 0, cache, logits.data(), true).ok());
  std::vector<int32_t> out;
  for (int64_t i = 0, pos = static_cast<int64_t>(prompt.size()); i < n; ++i) {
    out.push_back(models::Greedy(logits));
    if (i + 1 < n) {
      EXPECT_TRUE(model.Forward(std::span(&out.back(), 1), pos++, cache, logits.data(), true).ok());
    }
  }
  return out;
}

}  // namespace tessera::kernelflume::testing
