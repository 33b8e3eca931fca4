// VaeDecoder: a small seeded convolutional decoder from diffusion latents to RGB frames, every
// tensor allocated through a DeviceAllocator. fp32, NCHW.
//
// Model, with widths c_0 .. c_{n-1} (default 128, 128, 64, 32) and 3x3 convolutions (conv2d.h):
//   block 0:        conv latent_channels -> c_0, SiLU                  (latent resolution)
//   block b in 1..n-1: nearest upsample x2, conv c_{b-1} -> c_b, SiLU
//   block n:        conv c_{n-1} -> out_channels                       (full resolution)
// so the spatial factor is 2^(n-1) (8 by default). Weights "vae.conv<i>.w" (c_out, c_in * 9)
// ~ N(0, 1 / (9 c_in)) and "vae.conv<i>.b" (c_out) = 0, drawn from core::Rng(seed).Fork(i).
//
// Video: output frame f is decoded from latent frame (f + r - 1) / r (r = temporal_factor), so
// F = r (Lf - 1) + 1 output frames come from Lf latent frames (frame 0 from latent 0, then r
// frames per latent frame). Every output frame is decoded on its own (a pure function of its
// latent frame; the repeats cost compute, and keep the memory of a decoder that holds all F
// frames' activations, as real video VAEs do).
// Slices: the F frames are split into `slices` contiguous ranges [s F / S, (s + 1) F / S); each
// block is one op per slice ("vae.block<b>" with one slice, "vae.slice<s>.block<b>" with more)
// holding the activations of that slice's frames only. A frame's result does not depend on the
// slicing (bitwise; tested), since each image goes through its own GEMMs.
// Memory per block op: the input activation is freed, its output "...block<b>.out" allocated,
// the upsample workspace "...block<b>.up" and the convolution's im2col workspace
// "...block<b>.im2col" (c_in * 9 * H * W floats, the spike) live only in the op. The latent is
// freed in the first block op of the last slice; the image "vae.image" (F, out_channels, H, W)
// is allocated in the last block op of slice 0 and returned. With a frame sink (offload.image)
// there is no "vae.image": the last block op of each slice allocates "<prefix>.frames" (its
// frames only) and hands it to the sink inside that op; Decode then returns an empty tensor.
// Errors: Create validates the config (InvalidArgument naming the field); Decode returns
// InvalidArgument for an inconsistent geometry and passes Infeasible (out of device memory)
// out with nothing leaked and no op left open. Thread-safety: const; one thread per allocator.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "xema/pipeline/device_allocator.h"
#include "xema/pipeline/op_scope.h"

namespace tessera::xema {

inline constexpr int64_t kMaxDecodeFrames = 1024;

struct VaeDecoderConfig {
  int64_t latent_channels = 16;
  std::vector<int64_t> channels = {128, 128, 64, 32};  // block widths, 1 to 8 blocks
  int64_t out_channels = 3;
};

// InvalidArgument naming the field: channel counts in [1, 4096], 1 to 8 block widths.
[[nodiscard]] core::Status ValidateVaeDecoderConfig(const VaeDecoderConfig& config);

struct VaeGeometry {
  int64_t latent_frames = 1;  // Lf
  int64_t latent_height = 1;  // latent pixels
  int64_t latent_width = 1;
  int64_t frames = 1;  // F output frames, <= temporal_factor (Lf - 1) + 1
  int64_t temporal_factor = 1;
  int64_t slices = 1;  // in [1, F]
};

// Receives the frames [f0, f1) of one slice, (f1 - f0, out_channels, H, W), inside the slice's
// last block op; what it frees is released when that op ends.
using VaeFrameSink = std::function<core::Status(int64_t f0, int64_t f1, DeviceTensor frames)>;

class VaeDecoder {
 public:
  static core::StatusOr<VaeDecoder> Create(const VaeDecoderConfig& config, uint64_t seed,
                                           DeviceAllocator& allocator);

  const VaeDecoderConfig& config() const { return config_; }
  int64_t SpatialFactor() const { return int64_t{1} << (config_.channels.size() - 1); }
  int64_t WeightBytes() const;

  // latent (Lf, latent_channels, h, w) is consumed; returns "vae.image" (F, out_channels,
  // h * SpatialFactor(), w * SpatialFactor()), or an empty tensor when `sink` is given.
  core::StatusOr<DeviceTensor> Decode(DeviceAllocator& allocator, DeviceTensor latent,
                                      const VaeGeometry& geometry, const OpContext& context,
                                      const VaeFrameSink& sink = {}) const;

 private:
  VaeDecoderConfig config_;
  std::vector<DeviceTensor> weights_;  // conv i: weights_[2 i] (w), weights_[2 i + 1] (b)
};

}  // namespace tessera::xema
