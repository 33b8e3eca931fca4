// Test-only helpers for the Llama tests: small seeded configs that run in milliseconds, scratch
// directories named after the running test, full-sequence logits through a fresh LocalKvCache,
// and a status-message matcher. Not part of tessera_models.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/kv_cache.h"
#include "models/llama.h"
#include "models/llama_config.h"

namespace tessera::models::testing {

// A byte-vocabulary Llama small enough for many forwards per test: d 64, 2 layers, 4 query
// heads of 16, `kv_heads` KV heads, FFN 96, 128 positions.
inline LlamaConfig SmallLlamaConfig(int64_t kv_heads, const std::string& name = "small") {
  LlamaConfig c;
  c.name = name;
  c.vocab = 259;
  c.hidden = 64;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = kv_heads;
  c.head_dim = 16;
  c.ffn_hidden = 96;
  c.max_context = 128;
  c.rope_theta = 10000.0;
  c.rms_eps = 1e-5;
  c.bos_id = 256;
  c.eos_id = 257;
  return c;
}

// A fresh, empty directory under the test temp dir, named after the running test and `tag`.
inline std::string LlamaScratchDir(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path p = std::filesystem::path(::testing::TempDir()) /
                                  (std::string("llama_") + info->test_suite_name() + "_" +
                                   info->name() + "_" + tag + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

// Logits (T, V) of `tokens` from position 0 through a fresh LocalKvCache (CHECKs success).
inline std::vector<float> FullLogits(const LlamaModel& model, std::span<const int32_t> tokens) {
  LocalKvCache cache(model.config());
  std::vector<float> logits(tokens.size() * model.config().vocab);
  const core::Status s = model.Forward(tokens, 0, cache, logits.data(), /*last_only=*/false);
  CHECK(s.ok()) << s.ToString();
  return logits;
}

// Seeded token ids in [0, 256) after a BOS.
inline std::vector<int32_t> SeededTokens(uint64_t seed, int64_t n) {
  std::vector<int32_t> t{256};
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (int64_t i = 1; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t.push_back(static_cast<int32_t>(x % 256));
  }
  return t;
}

// Expects a non-OK status of `code` whose message holds every one of `needles`.
inline void ExpectError(const core::Status& s, core::StatusCode code,
                        const std::vector<std::string>& needles) {
  ASSERT_FALSE(s.ok()) << "expected an error holding " << (needles.empty() ? "" : needles[0]);
  EXPECT_EQ(s.code(), code) << s.ToString();
  for (const std::string& n : needles) {
    EXPECT_NE(s.message().find(n), std::string::npos) << "'" << n << "' not in: " << s.message();
  }
}

}  // namespace tessera::models::testing
