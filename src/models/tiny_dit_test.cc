#include "models/tiny_dit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"
#include "kernels/gemm.h"
#include "models/attention_backend.h"
#include "models/device_test_util.h"
#include "models/small_dit.h"

namespace tessera::models {
namespace {

SmallDitConfig TestConfig() {
  SmallDitConfig c;
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
  const SmallDitConfig c = TestConfig();
  auto reference = SmallDit::Create(c);
  ASSERT_TRUE(reference.ok());
  runtime::HeapDeviceAllocator allocator;
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
  LocalAttentionBackend backend;
  SmallDitActivations acts;
  ASSERT_TRUE(reference->Forward({latent, cu, ts}, backend, &acts).ok());

  TinyDit::Input in;
  in.latent = latent.data();
  in.image_tokens = n;
  in.t = t;
  for (const DitExecution att :
       {DitExecution{AttentionMode::kFused, 1}, DitExecution{AttentionMode::kChunked, 2}}) {
    auto out = dit->Forward(allocator, in, att, {"denoise", runtime::Section::kBody, 0});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_LE(RelativeError(out->f32_span(), acts.output), 1e-5);
  }
  EXPECT_EQ(allocator.ops(), 2 * (2 + c.num_layers));
  EXPECT_EQ(allocator.live_bytes(), dit->WeightBytes());
}

TEST(TinyDitTest, ChunkedAttentionEqualsFusedWithText) {
  const SmallDitConfig c = TestConfig();
  runtime::HeapDeviceAllocator allocator;
  auto dit = TinyDit::Create(c, 32, 3, allocator);
  ASSERT_TRUE(dit.ok());
  const int64_t n = 16, txt = 7, batch = 2;
  const auto latent = Random(8, n * c.in_channels);
  const auto text = Random(9, batch * txt * 32), pooled = Random(10, batch * 32);
  const float* text_ptrs[2] = {text.data(), text.data() + txt * 32};
  const float* pool_ptrs[2] = {pooled.data(), pooled.data() + 32};
  runtime::DeviceTensor ctx, pool;
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
  const runtime::OpContext body{"denoise", runtime::Section::kBody, 0};
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
  const SmallDitConfig c = TestConfig();
  runtime::HeapDeviceAllocator allocator;
  auto dit = TinyDit::Create(c, 32, 3, allocator);
  ASSERT_TRUE(dit.ok());
  const int64_t n = 64;
  const auto latent = Random(8, n * c.in_channels);
  TinyDit::Input in;
  in.latent = latent.data();
  in.image_tokens = n;
  const runtime::OpContext body{"denoise", runtime::Section::kBody, 0};
  int64_t peaks[3];
  int i = 0;
  for (const DitExecution att :
       {DitExecution{AttentionMode::kFused, 1}, DitExecution{AttentionMode::kChunked, 1},
        DitExecution{AttentionMode::kChunked, 4}}) {
    allocator.ResetPeak();
    auto out = dit->Forward(allocator, in, att, body);
    ASSERT_TRUE(out.ok());
    peaks[i++] = allocator.peak_bytes();
  }
  // k = 1 holds (H, L, L) scores; k = 4 a quarter of them.
  EXPECT_GE(peaks[1] - peaks[2],
            runtime::AlignBytes(2 * n * n * 4) - runtime::AlignBytes(2 * (n / 4) * n * 4) - 512);
  EXPECT_GT(peaks[1], peaks[0]);
}

// A seeded random DiT (sizes, text or not, batch) and input; `draw` picks every size.
struct RandomCase {
  SmallDitConfig config;
  int64_t text_hidden = 0, tokens = 0, text_tokens = 0, batch = 1;
  std::vector<float> latent, text, pooled;
};

RandomCase DrawCase(uint64_t seed) {
  core::Rng rng(seed);
  RandomCase c;
  c.config.num_heads = 1 + static_cast<int64_t>(rng.Below(3));
  c.config.hidden = c.config.num_heads * 8 * (1 + static_cast<int64_t>(rng.Below(10)));
  c.config.in_channels = 4 * (1 + static_cast<int64_t>(rng.Below(4)));
  c.config.num_layers = 1 + static_cast<int64_t>(rng.Below(3));
  c.config.ffn_hidden = 16 * (1 + static_cast<int64_t>(rng.Below(64)));  // up to 1024
  c.config.timestep_freq_dim = 16;
  c.config.modulation_init_std = 0.5f;
  c.config.init_seed = seed + 100;
  c.text_hidden = 8 * (1 + static_cast<int64_t>(rng.Below(4)));
  c.tokens = 1 + static_cast<int64_t>(rng.Below(40));
  c.text_tokens = static_cast<int64_t>(rng.Below(10));  // 0: no text
  c.batch = 1 + static_cast<int64_t>(rng.Below(3));
  c.latent = Random(seed + 1, c.tokens * c.config.in_channels);
  c.text = Random(seed + 2, c.batch * c.text_tokens * c.text_hidden);
  c.pooled = Random(seed + 3, c.batch * c.text_hidden);
  return c;
}

// The largest |chunked - unchunked| over seeded random DiTs and inputs, both attention modes
// and ffn_chunks 2, 3, 7 (dividing or not), B L and beyond (8-row chunks), on the current GEMM
// backend; also relative to the largest |output|.
struct ChunkDiffs {
  double abs = 0, rel = 0;
  int cases = 0;
};

ChunkDiffs FfnChunkDiffs() {
  ChunkDiffs d;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    RandomCase c = DrawCase(seed);
    runtime::HeapDeviceAllocator allocator;
    auto dit = TinyDit::Create(c.config, c.text_hidden, seed, allocator);
    CHECK(dit.ok()) << dit.status().ToString();
    runtime::DeviceTensor ctx, pool;
    TinyDit::Input in;
    in.latent = c.latent.data();
    in.image_tokens = c.tokens;
    in.t = 0.6f;
    in.batch = c.batch;
    if (c.text_tokens > 0) {
      std::vector<const float*> text_ptrs, pool_ptrs;
      for (int64_t b = 0; b < c.batch; ++b) {
        text_ptrs.push_back(c.text.data() + b * c.text_tokens * c.text_hidden);
        pool_ptrs.push_back(c.pooled.data() + b * c.text_hidden);
      }
      double flops = 0;
      CHECK(dit->ProjectText(allocator, text_ptrs, pool_ptrs, c.text_tokens, &ctx, &pool, &flops)
                .ok());
      in.text_ctx = &ctx;
      in.text_tokens = c.text_tokens;
      in.pool_ctx = &pool;
    }
    const int64_t rows = c.batch * (c.text_tokens + c.tokens);
    const runtime::OpContext body{"denoise", runtime::Section::kBody, 0};
    for (const AttentionMode mode : {AttentionMode::kFused, AttentionMode::kChunked}) {
      auto reference = dit->Forward(allocator, in, {mode, 3, 1}, body);
      CHECK(reference.ok()) << reference.status().ToString();
      double scale = 0;
      for (float v : reference->f32_span()) scale = std::max(scale, std::abs(double{v}));
      for (const int64_t k : {int64_t{2}, int64_t{3}, int64_t{7}, rows, rows + 5, 4 * rows}) {
        auto got = dit->Forward(allocator, in, {mode, 3, k}, body);
        CHECK(got.ok()) << got.status().ToString();
        const double diff = testing::MaxAbsDiff(got->f32_span(), reference->f32_span());
        d.abs = std::max(d.abs, diff);
        d.rel = std::max(d.rel, diff / std::max(scale, 1e-30));
        ++d.cases;
      }
    }
  }
  return d;
}

TEST(TinyDitTest, FfnChunksMatchOneChunkOnRandomConfigs) {
  // On both GEMM backends, within 1e-6 of the output scale. oneDNN gives bitwise equal
  // outputs (whole 8-row blocks and no one-row tail keep every row on the kernels' paths of
  // the unchunked call); OpenBLAS's kernel choice depends on the call's row count on some
  // CPUs (AMD EPYC: up to 7.6e-7 of the scale, a few float ulps; Intel Xeon: 0 seen).
  testing::ForEachGemmBackend([&](kernels::GemmBackend backend) {
    const ChunkDiffs d = FfnChunkDiffs();
    const std::string name = kernels::GemmBackendName(backend);
    EXPECT_LE(d.rel, 1e-6) << name << " over " << d.cases << " cases (max abs diff " << d.abs
                           << ")";
    if (backend == kernels::GemmBackend::kOneDnn) {
      EXPECT_EQ(d.abs, 0.0) << "oneDNN: bitwise";
    }
    RecordProperty("ffn_chunks_max_abs_diff_" + name, std::to_string(d.abs));
  });
}

TEST(TinyDitTest, FfnChunkRowsAreWholeBlocksWithoutAOneRowTail) {
  EXPECT_EQ(FfnChunkRows(100, 1), 100);
  EXPECT_EQ(FfnChunkRows(100, 2), 56);   // 50 -> 56
  EXPECT_EQ(FfnChunkRows(100, 4), 32);   // 25 -> 32
  EXPECT_EQ(FfnChunkRows(100, 7), 16);   // 15 -> 16
  EXPECT_EQ(FfnChunkRows(100, 500), 8);  // more chunks than rows
  EXPECT_EQ(FfnChunkRows(81, 81), 24);   // 8 and 16 leave one row: 81 = 3 x 24 + 9
  EXPECT_EQ(FfnChunkRows(9, 9), 9);      // 8 leaves one row: one chunk
  EXPECT_EQ(FfnChunkRows(5, 2), 5);      // fewer rows than a block
  for (int64_t rows = 1; rows <= 300; ++rows) {
    for (int64_t k = 1; k <= 40; ++k) {
      const int64_t r = FfnChunkRows(rows, k);
      ASSERT_TRUE(r == rows || (r % kFfnChunkRowMultiple == 0 && rows % r != 1))
          << rows << " rows, " << k << " chunks: " << r;
      ASSERT_GE(r, std::min(rows, (rows + k - 1) / k));
    }
  }
}

TEST(TinyDitTest, FfnChunksShrinkTheBlockWorkspaceByTheFormula) {
  const SmallDitConfig c = TestConfig();
  runtime::HeapDeviceAllocator allocator;
  auto dit = TinyDit::Create(c, 32, 3, allocator);
  ASSERT_TRUE(dit.ok());
  const int64_t n = 50, batch = 2, rows = batch * n, f = c.ffn_hidden;
  const auto latent = Random(8, n * c.in_channels);
  TinyDit::Input in;
  in.latent = latent.data();
  in.image_tokens = n;
  in.batch = batch;
  const runtime::OpContext body{"denoise", runtime::Section::kBody, 0};
  int64_t peak_one = 0;
  for (const int64_t k : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{7}, rows, rows + 1}) {
    testing::OpPeakObserver observer(allocator);
    auto out = dit->Forward(allocator, in, {AttentionMode::kFused, 1, k}, body);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const int64_t chunk_rows = FfnChunkRows(rows, k);
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const std::string name = "dit.block" + std::to_string(l);
      const testing::OpPeakObserver::Op* op = observer.Find(name);
      ASSERT_NE(op, nullptr) << name;
      EXPECT_EQ(op->allocs.at(name + ".ffn"), runtime::AlignBytes(4 * chunk_rows * f))
          << "chunks " << k;
    }
    const int64_t peak = observer.Find("dit.block0")->peak_bytes;
    if (k == 1) {
      peak_one = peak;
    } else {
      EXPECT_EQ(peak_one - peak,
                runtime::AlignBytes(4 * rows * f) - runtime::AlignBytes(4 * chunk_rows * f))
          << "chunks " << k;
    }
  }
  auto bad = dit->Forward(allocator, in, {AttentionMode::kFused, 1, 0}, body);
  EXPECT_EQ(bad.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("FFN chunks"), std::string::npos);
  EXPECT_EQ(allocator.live_bytes(), dit->WeightBytes());
}

}  // namespace
}  // namespace tessera::models
