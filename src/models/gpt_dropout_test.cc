// The residual-dropout masks: keyed by global ids only (a sequence-parallel rank's rows are the
// slices of the whole tensor's mask), near p on a large tensor, kept values scaled by
// 1 / (1 - p), every key word changing the mask, p = 0 a no-op.
#include "models/gpt_dropout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tessera::models {
namespace {

std::vector<float> Ones(int64_t n) { return std::vector<float>(static_cast<size_t>(n), 1.0f); }

TEST(GptDropout, RankRowsAreSlicesOfTheWholeMask) {
  const int64_t m = 24, h = 10;
  const MicroBatchKey key{.step = 3, .micro_batch = 5};
  std::vector<float> whole = Ones(m * h);
  ApplyGptDropout(7, 0.3f, key, 2, GptDropoutSite::kMlpOut, 0, m, h, whole.data());
  for (int tp : {2, 3, 4}) {
    const int64_t mr = m / tp;
    for (int r = 0; r < tp; ++r) {
      std::vector<float> part = Ones(mr * h);
      ApplyGptDropout(7, 0.3f, key, 2, GptDropoutSite::kMlpOut, r * mr, mr, h, part.data());
      for (int64_t e = 0; e < mr * h; ++e) {
        ASSERT_EQ(part[e], whole[r * mr * h + e]) << "tp " << tp << " rank " << r << " e " << e;
        ASSERT_EQ(part[e] != 0.0f,
                  GptDropoutKeeps(7, 0.3f, key, 2, GptDropoutSite::kMlpOut, r * mr * h + e));
      }
    }
  }
}

TEST(GptDropout, DropRateIsNearPAndKeptValuesAreScaled) {
  const int64_t n = 1 << 20;
  for (float p : {0.1f, 0.25f, 0.5f}) {
    std::vector<float> x = Ones(n);
    ApplyGptDropout(1, p, {.step = 0, .micro_batch = 1}, 0, GptDropoutSite::kAttentionOut, 0, 1, n,
                    x.data());
    const float scale = static_cast<float>(1.0 / (1.0 - p));
    int64_t dropped = 0;
    for (float v : x) {
      if (v == 0.0f) {
        ++dropped;
      } else {
        ASSERT_EQ(v, scale);
      }
    }
    // Binomial standard deviation sqrt(p (1 - p) / n) <= 5e-4: 0.003 is over 6 of them.
    EXPECT_NEAR(static_cast<double>(dropped) / n, p, 0.003) << "p " << p;
  }
}

TEST(GptDropout, EveryKeyWordChangesTheMask) {
  const int64_t n = 4096;
  const float p = 0.5f;
  auto mask = [&](uint64_t seed, MicroBatchKey key, int64_t layer, GptDropoutSite site) {
    std::vector<float> x = Ones(n);
    ApplyGptDropout(seed, p, key, layer, site, 0, 1, n, x.data());
    return x;
  };
  const std::vector<float> base = mask(1, {2, 3}, 4, GptDropoutSite::kAttentionOut);
  EXPECT_EQ(base, mask(1, {2, 3}, 4, GptDropoutSite::kAttentionOut));
  const std::vector<std::vector<float>> others = {mask(2, {2, 3}, 4, GptDropoutSite::kAttentionOut),
                                                  mask(1, {3, 3}, 4, GptDropoutSite::kAttentionOut),
                                                  mask(1, {2, 4}, 4, GptDropoutSite::kAttentionOut),
                                                  mask(1, {3, 2}, 4, GptDropoutSite::kAttentionOut),
                                                  mask(1, {2, 3}, 5, GptDropoutSite::kAttentionOut),
                                                  mask(1, {2, 3}, 4, GptDropoutSite::kMlpOut)};
  for (size_t i = 0; i < others.size(); ++i) {
    int64_t differ = 0;
    for (int64_t e = 0; e < n; ++e) differ += (others[i][e] != base[e]);
    // Independent masks at p = 1/2 differ in half of the elements.
    EXPECT_NEAR(static_cast<double>(differ) / n, 0.5, 0.05) << "variant " << i;
  }
}

TEST(GptDropout, ZeroProbabilityIsTheIdentity) {
  std::vector<float> x = {1.5f, -2.0f, 0.25f, 7.0f};
  const std::vector<float> before = x;
  ApplyGptDropout(1, 0.0f, {}, 0, GptDropoutSite::kMlpOut, 0, 2, 2, x.data());
  EXPECT_EQ(x, before);
  EXPECT_TRUE(GptDropoutKeeps(1, 0.0f, {}, 0, GptDropoutSite::kMlpOut, 3));
}

}  // namespace
}  // namespace tessera::models
