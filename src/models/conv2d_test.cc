#include "models/conv2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"

namespace tessera::models {
namespace {

std::vector<float> Random(core::Rng& rng, int64_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return v;
}

// Direct convolution in double: out[n, o, y, x] = b[o] + sum_{c, ky, kx} w[o, c, ky, kx] in[...].
std::vector<double> NaiveConv(const Conv3x3Shape& s, const std::vector<float>& in,
                              const std::vector<float>& w, const std::vector<float>& b) {
  const int64_t h = s.height, wd = s.width;
  std::vector<double> out(s.images * s.out_channels * h * wd);
  for (int64_t n = 0; n < s.images; ++n) {
    for (int64_t o = 0; o < s.out_channels; ++o) {
      for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < wd; ++x) {
          double acc = b[o];
          for (int64_t c = 0; c < s.in_channels; ++c) {
            for (int64_t ky = 0; ky < 3; ++ky) {
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t sy = y + ky - 1, sx = x + kx - 1;
                if (sy < 0 || sy >= h || sx < 0 || sx >= wd) continue;
                acc += static_cast<double>(w[((o * s.in_channels + c) * 3 + ky) * 3 + kx]) *
                       in[((n * s.in_channels + c) * h + sy) * wd + sx];
              }
            }
          }
          out[((n * s.out_channels + o) * h + y) * wd + x] = acc;
        }
      }
    }
  }
  return out;
}

TEST(Conv2dTest, MatchesNaiveDirectConvolution) {
  core::Rng rng(7);
  for (const Conv3x3Shape s :
       {Conv3x3Shape{2, 5, 7, 6, 9}, Conv3x3Shape{1, 16, 8, 8, 8}, Conv3x3Shape{3, 1, 1, 1, 4}}) {
    const auto in = Random(rng, s.images * s.in_channels * s.height * s.width);
    const auto w = Random(rng, s.out_channels * s.in_channels * 9);
    const auto b = Random(rng, s.out_channels);
    std::vector<float> out(s.images * s.out_channels * s.height * s.width, -1.0f);
    runtime::HeapDeviceAllocator allocator;
    allocator.BeginOp({.name = "conv", .phase = "vae"});
    ASSERT_TRUE(Conv3x3(allocator, "conv", s, in.data(), w.data(), b.data(), out.data()).ok());
    // The im2col workspace was allocated and freed (released when the op ends).
    EXPECT_EQ(allocator.live_bytes(), runtime::AlignBytes(s.Im2ColFloats() * 4));
    allocator.EndOp();
    EXPECT_EQ(allocator.live_bytes(), 0);
    const auto ref = NaiveConv(s, in, w, b);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(out[i], ref[i], 1e-4 * std::max(1.0, std::abs(ref[i]))) << "element " << i;
    }
  }
}

TEST(Conv2dTest, ImageInputsPickEachImagesSource) {
  core::Rng rng(3);
  const Conv3x3Shape one{1, 2, 3, 4, 4};
  const auto a = Random(rng, 2 * 16), w = Random(rng, 3 * 2 * 9), b = Random(rng, 3);
  std::vector<float> single(3 * 16), twice(2 * 3 * 16);
  runtime::HeapDeviceAllocator allocator;
  ASSERT_TRUE(Conv3x3(allocator, "c", one, a.data(), w.data(), b.data(), single.data()).ok());
  const float* inputs[2] = {a.data(), a.data()};
  ASSERT_TRUE(Conv3x3(allocator, "c", Conv3x3Shape{2, 2, 3, 4, 4}, nullptr, w.data(), b.data(),
                      twice.data(), inputs)
                  .ok());
  for (int64_t i = 0; i < 48; ++i) {
    EXPECT_EQ(twice[i], single[i]);
    EXPECT_EQ(twice[48 + i], single[i]);
  }
}

TEST(Conv2dTest, UpsampleRepeatsEachPixelTwice) {
  const std::vector<float> in = {1, 2, 3, 4, 5, 6};  // (1 plane, 2, 3)
  std::vector<float> out(24);
  UpsampleNearest2x(in.data(), 1, 2, 3, out.data());
  const std::vector<float> want = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3,
                                   4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6};
  EXPECT_EQ(out, want);
}

TEST(Conv2dTest, OutOfMemoryIsInfeasible) {
  runtime::HeapDeviceAllocator allocator(1024);
  const Conv3x3Shape s{1, 4, 4, 8, 8};
  std::vector<float> in(256, 1.0f), w(144, 1.0f), b(4, 0.0f), out(256);
  const core::Status st = Conv3x3(allocator, "c", s, in.data(), w.data(), b.data(), out.data());
  EXPECT_EQ(st.code(), core::StatusCode::kInfeasible) << st.ToString();
  EXPECT_EQ(allocator.live_bytes(), 0);
}

}  // namespace
}  // namespace tessera::models
