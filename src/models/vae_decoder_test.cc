#include "models/vae_decoder.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"
#include "models/device_test_util.h"
#include "models/vae_tiling.h"

namespace tessera::models {
namespace {

VaeDecoderConfig SmallConfig() {
  VaeDecoderConfig c;
  c.latent_channels = 4;
  c.channels = {16, 8};  // spatial factor 2
  return c;
}

runtime::DeviceTensor RandomLatent(runtime::DeviceAllocator& allocator, int64_t floats,
                                   uint64_t seed) {
  auto t = allocator.AllocateF32(floats, "latent", runtime::TensorKind::kActivation);
  CHECK(t.ok());
  core::Rng rng(seed);
  for (int64_t i = 0; i < floats; ++i) t->f32()[i] = static_cast<float>(rng.Normal());
  return std::move(*t);
}

TEST(VaeDecoderTest, SlicesGiveBitwiseTheSameFrames) {
  runtime::HeapDeviceAllocator allocator;
  auto vae = VaeDecoder::Create(SmallConfig(), 4, allocator);
  ASSERT_TRUE(vae.ok()) << vae.status().ToString();
  EXPECT_EQ(vae->SpatialFactor(), 2);
  VaeGeometry g{.latent_frames = 3,
                .latent_height = 4,
                .latent_width = 6,
                .frames = 9,
                .temporal_factor = 4,
                .slices = 1};
  const int64_t latent_floats = 3 * 4 * 4 * 6;
  const runtime::OpContext ctx{"vae", runtime::Section::kEpilogue, -1};
  std::vector<float> reference;
  for (int64_t slices : {1, 2, 3, 9}) {
    g.slices = slices;
    const int64_t ops_before = allocator.ops();
    auto image = vae->Decode(allocator, RandomLatent(allocator, latent_floats, 17), g, ctx);
    ASSERT_TRUE(image.ok()) << image.status().ToString();
    EXPECT_EQ(allocator.ops() - ops_before, slices * 3);
    ASSERT_EQ(image->f32_count(), 9 * 3 * 8 * 12);
    std::vector<float> got(image->f32(), image->f32() + image->f32_count());
    if (reference.empty()) {
      reference = got;
    } else {
      EXPECT_EQ(got, reference) << slices << " slices";
    }
    image->Reset();
    EXPECT_EQ(allocator.live_bytes(), vae->WeightBytes());
  }
  // Frames that share a latent frame are equal; frames from different ones differ.
  const int64_t frame = 3 * 8 * 12;
  auto frame_equal = [&](int64_t a, int64_t b) {
    return std::equal(reference.begin() + a * frame, reference.begin() + (a + 1) * frame,
                      reference.begin() + b * frame);
  };
  EXPECT_TRUE(frame_equal(1, 4));
  EXPECT_TRUE(frame_equal(5, 8));
  EXPECT_FALSE(frame_equal(0, 1));
  EXPECT_FALSE(frame_equal(4, 5));
  for (float v : reference) ASSERT_TRUE(std::isfinite(v));
}

TEST(VaeDecoderTest, BadGeometryIsInvalidArgument) {
  runtime::HeapDeviceAllocator allocator;
  auto vae = VaeDecoder::Create(SmallConfig(), 4, allocator);
  ASSERT_TRUE(vae.ok());
  VaeGeometry g{.latent_frames = 1,
                .latent_height = 4,
                .latent_width = 4,
                .frames = 2,
                .temporal_factor = 4,
                .slices = 1};
  auto image = vae->Decode(allocator, RandomLatent(allocator, 4 * 16, 1), g,
                           {"vae", runtime::Section::kEpilogue, -1});
  EXPECT_EQ(image.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(allocator.live_bytes(), vae->WeightBytes());
  VaeDecoderConfig bad = SmallConfig();
  bad.channels.clear();
  EXPECT_EQ(ValidateVaeDecoderConfig(bad).code(), core::StatusCode::kInvalidArgument);
}

// Decodes a seeded latent with `g` and returns the frames (the allocator left as found).
std::vector<float> DecodeFrames(runtime::DeviceAllocator& allocator, const VaeDecoder& vae,
                                const VaeGeometry& g, uint64_t seed) {
  const int64_t floats =
      g.latent_frames * vae.config().latent_channels * g.latent_height * g.latent_width;
  auto image = vae.Decode(allocator, RandomLatent(allocator, floats, seed), g,
                          {"vae", runtime::Section::kEpilogue, -1});
  CHECK(image.ok()) << image.status().ToString();
  return std::vector<float>(image->f32(), image->f32() + image->f32_count());
}

TEST(VaeDecoderTest, TiledDecodeEqualsUntiled) {
  struct Case {
    std::vector<int64_t> channels;  // 1 to 3 blocks: spatial factor 1, 2, 4
    int64_t latent_frames, h, w, frames, temporal, slices;
  };
  const std::vector<Case> cases = {{{16, 8}, 1, 8, 8, 1, 1, 1},      // dividing
                                   {{16, 8}, 1, 7, 5, 1, 1, 1},      // non-dividing, non-square
                                   {{8}, 1, 9, 11, 1, 1, 1},         // one block (factor 1)
                                   {{12, 8, 6}, 1, 10, 6, 1, 1, 1},  // three blocks (factor 4)
                                   {{16, 8}, 3, 6, 7, 9, 4, 3},      // video, slices
                                   {{12, 8, 6}, 2, 5, 9, 5, 4, 2}};  // video, slices, three blocks
  double max_diff = 0;
  testing::ForEachGemmBackend([&](kernels::GemmBackend backend) {
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const Case& c = cases[ci];
      VaeDecoderConfig config;
      config.latent_channels = 4;
      config.channels = c.channels;
      runtime::HeapDeviceAllocator allocator;
      auto vae = VaeDecoder::Create(config, 7 + ci, allocator);
      ASSERT_TRUE(vae.ok()) << vae.status().ToString();
      VaeGeometry g{.latent_frames = c.latent_frames,
                    .latent_height = c.h,
                    .latent_width = c.w,
                    .frames = c.frames,
                    .temporal_factor = c.temporal,
                    .slices = c.slices,
                    .tiles = 1};
      const std::vector<float> reference = DecodeFrames(allocator, *vae, g, 100 + ci);
      for (int64_t tiles : {1, 2, 3, 4, 6, 12}) {
        g.tiles = tiles;
        const int64_t ops_before = allocator.ops();
        const std::vector<float> got = DecodeFrames(allocator, *vae, g, 100 + ci);
        const double diff = testing::MaxAbsDiff(got, reference);
        EXPECT_LE(diff, 1e-6) << kernels::GemmBackendName(backend) << " case " << ci << " tiles "
                              << tiles;
        max_diff = std::max(max_diff, diff);
        const int64_t grid = std::min(tiles, c.h) * std::min(tiles, c.w);
        EXPECT_EQ(allocator.ops() - ops_before,
                  c.slices * grid * static_cast<int64_t>(c.channels.size() + 1))
            << "case " << ci << " tiles " << tiles;
        EXPECT_EQ(allocator.live_bytes(), vae->WeightBytes());
      }
    }
  });
  RecordProperty("vae_tiles_max_abs_diff", std::to_string(max_diff));
}

TEST(VaeDecoderTest, TiledOpsAreNamedBySliceTileAndBlock) {
  runtime::HeapDeviceAllocator allocator;
  auto vae = VaeDecoder::Create(SmallConfig(), 4, allocator);
  ASSERT_TRUE(vae.ok());
  const VaeGeometry g{.latent_frames = 2,
                      .latent_height = 4,
                      .latent_width = 3,
                      .frames = 5,
                      .temporal_factor = 4,
                      .slices = 2,
                      .tiles = 2};
  testing::OpPeakObserver observer(allocator);
  (void)DecodeFrames(allocator, *vae, g, 1);
  std::vector<std::string> names;
  for (const auto& op : observer.ops()) names.push_back(op.name);
  std::vector<std::string> want;
  for (int s = 0; s < 2; ++s) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        for (int b = 0; b < 3; ++b)
          want.push_back(fmt::format("vae.slice{}.tile{}_{}.block{}", s, i, j, b));
      }
    }
  }
  EXPECT_EQ(names, want);
  // The image is allocated by the first tile's last block, and only there.
  EXPECT_EQ(observer.Find("vae.slice0.tile0_0.block2")->allocs.count("vae.image"), 1u);
  EXPECT_EQ(observer.Find("vae.slice1.tile0_0.block2")->allocs.count("vae.image"), 0u);
}

// At 256x256 pixels (the default decoder, x8): the peak falls with the tile count and every
// allocation of every block op has the size of its haloed tile.
TEST(VaeDecoderTest, TilesCutThePeakByTheFormula) {
  const VaeDecoderConfig config;  // 16 -> 128, 128, 64, 32 -> 3
  runtime::HeapDeviceAllocator allocator;
  auto vae = VaeDecoder::Create(config, 4, allocator);
  ASSERT_TRUE(vae.ok());
  const int64_t n = static_cast<int64_t>(config.channels.size()), factor = vae->SpatialFactor();
  VaeGeometry g{.latent_frames = 1,
                .latent_height = 32,
                .latent_width = 32,
                .frames = 1,
                .temporal_factor = 1,
                .slices = 1,
                .tiles = 1};
  std::vector<int64_t> peaks;
  std::vector<double> flops;
  for (int64_t t : {1, 2, 4}) {
    g.tiles = t;
    allocator.ResetPeak();
    testing::OpPeakObserver observer(allocator);
    (void)DecodeFrames(allocator, *vae, g, 3);
    peaks.push_back(allocator.peak_bytes());
    flops.push_back(observer.Flops("vae."));
    const std::vector<TileSpan> spans = TileSpans(32, t, vae->TileHalo());
    for (size_t i = 0; i < spans.size(); ++i) {
      for (size_t j = 0; j < spans.size(); ++j) {
        const std::string prefix = t == 1 ? "vae" : fmt::format("vae.tile{}_{}", i, j);
        int64_t h = spans[i].size(), w = spans[j].size();
        for (int64_t b = 0; b <= n; ++b) {
          const std::string name = fmt::format("{}.block{}", prefix, b);
          const testing::OpPeakObserver::Op* op = observer.Find(name);
          ASSERT_NE(op, nullptr) << name;
          const int64_t c_in = b == 0 ? config.latent_channels : config.channels[b - 1];
          const int64_t c_out = b == n ? config.out_channels : config.channels[b];
          std::map<std::string, int64_t> want;
          if (b == 0 && t > 1) want[name + ".crop"] = runtime::AlignBytes(4 * c_in * h * w);
          if (b > 0 && b < n) {
            h *= 2;
            w *= 2;
            want[name + ".up"] = runtime::AlignBytes(4 * c_in * h * w);
          }
          want[name + ".im2col"] = runtime::AlignBytes(4 * 9 * c_in * h * w);
          if (b < n) want[name + ".out"] = runtime::AlignBytes(4 * c_out * h * w);
          if (b == n && t > 1) want[name + ".rgb"] = runtime::AlignBytes(4 * c_out * h * w);
          if (b == n && i == 0 && j == 0) {
            want["vae.image"] = runtime::AlignBytes(4 * c_out * 32 * factor * 32 * factor);
          }
          EXPECT_EQ(op->allocs, want) << name;
        }
      }
    }
  }
  EXPECT_LT(peaks[1], peaks[0]);
  EXPECT_LT(peaks[2], peaks[1]);
  RecordProperty("peak_bytes_tiles_1_2_4", fmt::format("{} {} {}", peaks[0], peaks[1], peaks[2]));
  // The halo recompute, counted by the ops, is the closed form.
  for (size_t k = 1; k < flops.size(); ++k) {
    const int64_t t = k == 1 ? 2 : 4;
    EXPECT_NEAR(flops[k] / flops[0], TiledComputeFactor(32, 32, t, 2), 1e-9) << t << " tiles";
  }
}

TEST(VaeDecoderTest, OutOfMemoryMidTiledDecodeLeaksNothing) {
  runtime::HeapDeviceAllocator probe;
  auto probe_vae = VaeDecoder::Create(SmallConfig(), 4, probe);
  ASSERT_TRUE(probe_vae.ok());
  const VaeGeometry g{.latent_frames = 2,
                      .latent_height = 9,
                      .latent_width = 7,
                      .frames = 5,
                      .temporal_factor = 4,
                      .slices = 2,
                      .tiles = 3};
  const int64_t latent_floats = 2 * 4 * 9 * 7;
  probe.ResetPeak();
  const int64_t before_ops = probe.ops();
  (void)DecodeFrames(probe, *probe_vae, g, 5);
  const int64_t total_ops = probe.ops() - before_ops;
  const int64_t start = probe_vae->WeightBytes() + runtime::AlignBytes(4 * latent_floats);
  const int64_t peak = probe.peak_bytes();
  // Budgets from just above the latent to just below the peak fail at different ops.
  std::vector<int64_t> failed_at;
  for (int64_t budget = start; budget < peak;
       budget += std::max<int64_t>(512, (peak - start) / 40)) {
    runtime::HeapDeviceAllocator allocator(budget);
    auto vae = VaeDecoder::Create(SmallConfig(), 4, allocator);
    ASSERT_TRUE(vae.ok());
    auto image = vae->Decode(allocator, RandomLatent(allocator, latent_floats, 5), g,
                             {"vae", runtime::Section::kEpilogue, -1});
    ASSERT_EQ(image.status().code(), core::StatusCode::kInfeasible) << budget;
    EXPECT_EQ(allocator.live_bytes(), vae->WeightBytes()) << budget;
    EXPECT_FALSE(allocator.in_op());
    failed_at.push_back(allocator.ops());
  }
  std::sort(failed_at.begin(), failed_at.end());
  failed_at.erase(std::unique(failed_at.begin(), failed_at.end()), failed_at.end());
  EXPECT_GE(failed_at.size(), 3u);
  EXPECT_GT(failed_at.back(), total_ops / 2);  // some budget fails in a later tile or slice
}

}  // namespace
}  // namespace tessera::models
