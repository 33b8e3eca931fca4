#include "xema/pipeline/tiny_dit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "models/attention_backend.h"
#include "models/small_dit.h"

namespace tessera::xema {
namespace {

models::SmallDitConfig TestConfig() {
  models::SmallDitConfig c;
  c.in_channels = 16;
  c.hidden = 64;
  c.num_heads = 2;
  c.num_layers = 2;
  c.ffn_hidden = 128;
  c.timestep_freq_dim = 32;
  c.modulation_init_std = 0.5f;  // modulation visibly active
  c.init_seed = 11;
  return c;
}

std::vector<float> Random(uint64_t seed, int64_t n) {
  core::Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return v;
}

// max |a - b| / max |b|.
double RelativeError(std::span<const float> a, std::span<const float> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

TEST(TinyDitTest, WithoutTextEqualsSmallDit) {
  const models::SmallDitConfig c = TestConfig();
  auto reference = models::SmallDit::Create(c);
  ASSERT_TRUE(reference.ok());
  HeapDeviceAllocator allocator;
  auto dit = TinyDit::Create(c, 32, 3, allocator);
  ASSERT_TRUE(dit.ok()) << dit.status().ToString();
  ASSERT_EQ(dit->Parameters().size(), reference->Parameters().size());
  EXPECT_TRUE(std::equal(dit->Parameters().begin(), dit->Parameters().end(),
                         reference->Parameters().begin()));

  const int64_t n = 24;
  const auto latent = Random(5, n * c.in_channels);
  const float t = 0.37f;
  const std::vector<int64_t> cu = {0, n};
  const std::vector<float> ts = {t};
  models::LocalAttentionBackend backend;
  models::SmallDitActivations acts;
  ASSERT_TRUE(reference->Forward({latent, cu, ts}, backend, &acts).ok());

  TinyDit::Input in;
  in.latent = latent.data();
  in.image_tokens = n;
  in.t = t;
  for (const DitAttention att :
       {DitAttention{AttentionMode::kFused, 1}, DitAttention{AttentionMode::kChunked, 2}}) {
    auto out = dit->Forward(allocator, in, att, {Phase::kDenoise, Section::kBody, 0});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_LE(RelativeError(out->f32_span(), acts.output), 1e-5);
  }
  EXPECT_EQ(allocator.ops(), 2 * (2 + c.num_layers));
  EXPECT_EQ(allocator.live_bytes(), dit->WeightBytes());
}

TEST(TinyDitTest, ChunkedAttentionEqualsFusedWithText) {
  const models::SmallDitConfig c = TestConfig();
  HeapDeviceAllocator allocator;
  auto dit = TinyDit::Create(c, 32, 3, allocator);
  ASSERT_TRUE(dit.ok());
  const int64_t n = 16, txt = 7, batch = 2;
  const auto latent = Random(8, n * c.in_channels);
  const auto text = Random(9, batch * txt * 32), pooled = Random(10, batch * 32);
  const float* text_ptrs[2] = {text.data(), text.data() + txt * 32};
  const float* pool_ptrs[2] = {pooled.data(), pooled.data() + 32};
  DeviceTensor ctx, pool;
  double flops = 0;
  ASSERT_TRUE(dit->ProjectText(allocator, text_ptrs, pool_ptrs, txt, &ctx, &pool, &flops).ok());
  EXPECT_GT(flops, 0);
  TinyDit::Input in;
  in.latent = latent.data();
  in.image_tokens = n;
  in.t = 0.8f;
  in.batch = batch;
  in.text_ctx = &ctx;
  in.text_tokens = txt;
  in.pool_ctx = &pool;
  const OpContext body{Phase::kDenoise, Section::kBody, 0};
  auto fused = dit->Forward(allocator, in, {AttentionMode::kFused, 1}, body);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  for (int64_t k : {1, 3, 100}) {
    const int64_t peak_before = allocator.peak_bytes();
    allocator.ResetPeak();
    auto chunked = dit->Forward(allocator, in, {AttentionMode::kChunked, k}, body);
    ASSERT_TRUE(chunked.ok()) << chunked.status().ToString();
    EXPECT_LE(RelativeError(chunked->f32_span(), fused->f32_span()), 1e-5) << "chunks " << k;
    (void)peak_before;
  }
  // The two sequences (different prompts) predict differently.
  EXPECT_GT(
      RelativeError(std::span<const float>(fused->f32(), n * c.in_channels),
                    std::span<const float>(fused->f32() + n * c.in_channels, n * c.in_channels)),
      1e-3);
  // release_context frees the text context in dit.embed.
  in.release_context = true;
  auto last = dit->Forward(allocator, in, {AttentionMode::kFused, 1}, body);
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(ctx.empty());
  EXPECT_TRUE(pool.empty());
  EXPECT_EQ(RelativeError(last->f32_span(), fused->f32_span()), 0.0);
}

TEST(TinyDitTest, ChunkedScoresAreMaterialised) {
  const models::SmallDitConfig c = TestConfig();
  HeapDeviceAllocator allocator;
  auto dit = TinyDit::Create(c, 32, 3, allocator);
  ASSERT_TRUE(dit.ok());
  const int64_t n = 64;
  const auto latent = Random(8, n * c.in_channels);
  TinyDit::Input in;
  in.latent = latent.data();
  in.image_tokens = n;
  const OpContext body{Phase::kDenoise, Section::kBody, 0};
  int64_t peaks[3];
  int i = 0;
  for (const DitAttention att :
       {DitAttention{AttentionMode::kFused, 1}, DitAttention{AttentionMode::kChunked, 1},
        DitAttention{AttentionMode::kChunked, 4}}) {
    allocator.ResetPeak();
    auto out = dit->Forward(allocator, in, att, body);
    ASSERT_TRUE(out.ok());
    peaks[i++] = allocator.peak_bytes();
  }
  // k = 1 holds (H, L, L) scores; k = 4 a quarter of them.
  EXPECT_GE(peaks[1] - peaks[2], AlignBytes(2 * n * n * 4) - AlignBytes(2 * (n / 4) * n * 4) - 512);
  EXPECT_GT(peaks[1], peaks[0]);
}

}  // namespace
}  // namespace tessera::xema
