#include "models/conv2d.h"

#include <algorithm>

#include "kernels/gemm.h"
#include "models/ops.h"

namespace tessera::models {

void Im2Col3x3(const float* in, int64_t channels, int64_t height, int64_t width, float* col) {
  const int64_t hw = height * width;
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = in + c * hw;
    for (int64_t ky = 0; ky < 3; ++ky) {
      for (int64_t kx = 0; kx < 3; ++kx) {
        float* row = col + (c * 9 + ky * 3 + kx) * hw;
        const int64_t dx = kx - 1;
        // Output columns x whose source column x + dx lies inside [0, width).
        const int64_t x_lo = std::max<int64_t>(0, -dx);
        const int64_t x_hi = std::min<int64_t>(width, width - dx);
        for (int64_t y = 0; y < height; ++y) {
          float* dst = row + y * width;
          const int64_t sy = y + ky - 1;
          if (sy < 0 || sy >= height) {
            std::fill_n(dst, width, 0.0f);
            continue;
          }
          const float* src = plane + sy * width;
          std::fill_n(dst, x_lo, 0.0f);
          std::copy(src + x_lo + dx, src + x_hi + dx, dst + x_lo);
          std::fill(dst + x_hi, dst + width, 0.0f);
        }
      }
    }
  }
}

core::Status Conv3x3(runtime::DeviceAllocator& allocator, const std::string& name,
                     const Conv3x3Shape& s, const float* in, const float* weight, const float* bias,
                     float* out, std::span<const float* const> image_inputs) {
  ASSIGN_OR_RETURN(
      runtime::DeviceTensor col,
      allocator.AllocateF32(s.Im2ColFloats(), name + ".im2col", runtime::TensorKind::kWorkspace));
  const int64_t hw = s.height * s.width, k = s.in_channels * 9;
  for (int64_t n = 0; n < s.images; ++n) {
    const float* image = !image_inputs.empty() ? image_inputs[n] : in + n * s.in_channels * hw;
    Im2Col3x3(image, s.in_channels, s.height, s.width, col.f32());
    float* y = out + n * s.out_channels * hw;
    kernels::GemmUnchecked(kernels::Transpose::kNo, kernels::Transpose::kNo, s.out_channels, hw, k,
                           1.0f, weight, k, col.f32(), hw, 0.0f, y, hw);
    for (int64_t c = 0; c < s.out_channels; ++c) {
      float* plane = y + c * hw;
      const float b = bias[c];
      for (int64_t i = 0; i < hw; ++i) plane[i] += b;
    }
  }
  col.Reset();
  return core::Status::Ok();
}

void UpsampleNearest2x(const float* in, int64_t planes, int64_t height, int64_t width, float* out) {
  const int64_t ow = 2 * width;
  for (int64_t p = 0; p < planes; ++p) {
    const float* src_plane = in + p * height * width;
    float* dst_plane = out + p * 4 * height * width;
    for (int64_t y = 0; y < height; ++y) {
      const float* src = src_plane + y * width;
      float* dst = dst_plane + 2 * y * ow;
      for (int64_t x = 0; x < width; ++x) dst[2 * x] = dst[2 * x + 1] = src[x];
      std::copy(dst, dst + ow, dst + ow);
    }
  }
}

void SiluInPlace(float* x, int64_t count) { ops::SiluForward(x, count, x); }

}  // namespace tessera::models
