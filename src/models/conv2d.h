// 2-D convolution pieces of the VAE decoder (vae_decoder.h), fp32, NCHW, row-major.
//
// Conv3x3: stride 1, padding 1 (zeros), so the output keeps the input's (H, W). Per image it
// unfolds the input into an im2col matrix col (C_in * 9, H * W), row (c * 9 + ky * 3 + kx),
// column (y * W + x) = in[c, y + ky - 1, x + kx - 1] (0 outside), and runs ONE GEMM
//   out (C_out, H * W) = weight (C_out, C_in * 9) col + bias (per output channel).
// The im2col buffer is the memory spike of the decoder: Conv3x3 allocates it through the
// runtime::DeviceAllocator as a workspace tensor named "<name>.im2col" (C_in * 9 * H * W floats),
// reuses it for every image of the batch and frees it before returning (inside an open op it is
// then released when the op ends). Infeasible (out of device memory) passes out; nothing is written
// to `out` then.
//
// UpsampleNearest2x: out (planes, 2H, 2W)[p, y, x] = in (planes, H, W)[p, y / 2, x / 2].
// SiluInPlace: x = x * sigmoid(x) (ops::SiluForward).
//
// Sizes are trusted (the decoder validates its config and request); buffers must not alias
// except in SiluInPlace. Thread-safety: as the allocator; GEMMs use the BLAS's threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"
#include "runtime/device_allocator.h"

namespace tessera::models {

struct Conv3x3Shape {
  int64_t images = 1;  // N
  int64_t in_channels = 1;
  int64_t out_channels = 1;
  int64_t height = 1;  // pixels
  int64_t width = 1;   // pixels

  int64_t Im2ColFloats() const { return in_channels * 9 * height * width; }
  // 2 m n k per image GEMM.
  double Flops() const {
    return 2.0 * static_cast<double>(images) * static_cast<double>(out_channels) *
           static_cast<double>(in_channels * 9) * static_cast<double>(height * width);
  }
};

// Fills col (C_in * 9, H * W) from one image in (C_in, H, W).
void Im2Col3x3(const float* in, int64_t channels, int64_t height, int64_t width, float* col);

// out (N, C_out, H, W) = conv3x3(in (N, C_in, H, W)); weight (C_out, C_in * 9), bias (C_out).
// `image_inputs`, when not empty (size N), gives each image's input pointer instead of
// in + n * C_in H W (the video decoder maps output frames to latent frames this way).
[[nodiscard]] core::Status Conv3x3(runtime::DeviceAllocator& allocator, const std::string& name,
                                   const Conv3x3Shape& shape, const float* in, const float* weight,
                                   const float* bias, float* out,
                                   std::span<const float* const> image_inputs = {});

void UpsampleNearest2x(const float* in, int64_t planes, int64_t height, int64_t width, float* out);

void SiluInPlace(float* x, int64_t count);

}  // namespace tessera::models
