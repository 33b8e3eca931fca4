#include "xema/pipeline/vae_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"

namespace tessera::xema {
namespace {

VaeDecoderConfig SmallConfig() {
  VaeDecoderConfig c;
  c.latent_channels = 4;
  c.channels = {16, 8};  // spatial factor 2
  return c;
}

DeviceTensor RandomLatent(DeviceAllocator& allocator, int64_t floats, uint64_t seed) {
  auto t = allocator.AllocateF32(floats, "latent", TensorKind::kActivation);
  CHECK(t.ok());
  core::Rng rng(seed);
  for (int64_t i = 0; i < floats; ++i) t->f32()[i] = static_cast<float>(rng.Normal());
  return std::move(*t);
}

TEST(VaeDecoderTest, SlicesGiveBitwiseTheSameFrames) {
  HeapDeviceAllocator allocator;
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
  const OpContext ctx{Phase::kVae, Section::kEpilogue, -1};
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
  HeapDeviceAllocator allocator;
  auto vae = VaeDecoder::Create(SmallConfig(), 4, allocator);
  ASSERT_TRUE(vae.ok());
  VaeGeometry g{.latent_frames = 1,
                .latent_height = 4,
                .latent_width = 4,
                .frames = 2,
                .temporal_factor = 4,
                .slices = 1};
  auto image = vae->Decode(allocator, RandomLatent(allocator, 4 * 16, 1), g,
                           {Phase::kVae, Section::kEpilogue, -1});
  EXPECT_EQ(image.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(allocator.live_bytes(), vae->WeightBytes());
  VaeDecoderConfig bad = SmallConfig();
  bad.channels.clear();
  EXPECT_EQ(ValidateVaeDecoderConfig(bad).code(), core::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::xema
