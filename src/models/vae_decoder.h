// VaeDecoder: a small seeded convolutional decoder from diffusion latents to RGB frames, every
// tensor allocated through a runtime::DeviceAllocator. fp32, NCHW.
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
// Slices: the F frames are split into `slices` contiguous ranges [s F / S, (s + 1) F / S), each
// decoded on its own, holding the activations of that slice's frames only. A frame's result
// does not depend on the slicing (bitwise; tested), since each image goes through its own GEMMs.
// Tiles (exact spatial tiling, vae_tiling.h): with `tiles` = t the latent plane is split into a
// t_y x t_x grid, t_y = min(t, h) and t_x = min(t, w) (clamped so that no tile is empty); tile
// (i, j) covers the latent rows [i h / t_y, (i + 1) h / t_y) and the columns alike (its core)
// and runs through the WHOLE decoder on its core plus a halo of TileHalo() = 2 latent pixels on
// each side, clipped at the image border; only its core, scaled by SpatialFactor(), is copied
// into the image. The halo covers the decoder's receptive field exactly (derivation in
// vae_tiling.h), so the frames equal the untiled decode: tested within 1e-6 on seeded latents
// (bitwise with oneDNN, the default GEMM; 2.4e-7 with OpenBLAS, whose sums depend on the
// image width). Cost: every block convolves the haloed spans, TiledComputeFactor() times the
// untiled work ((1 + 4 (t_y - 1) / h) (1 + 4 (t_x - 1) / w) when the edge tiles have >= 2
// pixels), plus the crop and core copies. Gain: a block op holds the activations of one haloed
// tile, about (h / t + 4) (w / t + 4) / (h w) of the untiled ones (~1 / t^2 for h / t >> 4);
// the latent and the image stay whole.
// Order and op names: for each slice s, for each tile (i, j) in row-major order, one op per
// block b = 0 .. n: "vae.block<b>" (one slice, one tile), "vae.slice<s>.block<b>" (slices),
// "vae.tile<i>_<j>.block<b>" (tiles), "vae.slice<s>.tile<i>_<j>.block<b>" (both). A grid of one
// tile (t = 1, or a 1 x 1 latent) is untiled and named so. "vae" is VaeGeometry::name.
// Memory per block op <op>, for the frames of its slice and the haloed span of its tile: the
// input activation (the previous block's "<op>.out") is freed; "<op>.out" is allocated
// (blocks 0 .. n-1); workspaces living only in the op: "<op>.up" (blocks 1 .. n-1, the
// upsampled input) and "<op>.im2col" (c_in * 9 * H * W floats of one frame, the spike); tiled
// only, "<op>.crop" (block 0: the tile's span of the latent, (frames, latent_channels, span))
// and "<op>.rgb" (block n: (frames, out_channels, span at full resolution), whose core is
// copied into the image; untiled, block n writes the image in place). The image "vae.image"
// (F, out_channels, H, W) is allocated in block n's op of the first tile of slice 0 and
// returned; the latent is freed in block 0's op of the last tile of the last slice (its last
// reader). With a frame sink (offload.image) there is no "vae.image": each slice's frames
// "<slice prefix>.frames" (its frames only) are allocated in block n's op of its first tile and
// handed to the sink inside block n's op of its last tile; Decode then returns an empty tensor.
// Errors: Create validates the config (InvalidArgument naming the field); Decode returns
// InvalidArgument for an inconsistent geometry and passes Infeasible (out of device memory)
// out with nothing leaked and no op left open. Thread-safety: const; one thread per allocator.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/device_allocator.h"
#include "runtime/op_scope.h"

namespace tessera::models {

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
  int64_t tiles = 1;   // tiles per axis, >= 1 (clamped to the latent height and width)
  // The first component of every op and activation name ("vae" in the names below); a batch
  // of requests decodes request j >= 1 as "vae<j>" (tiny_pipeline.h).
  std::string name = "vae";
};

// Receives the frames [f0, f1) of one slice, (f1 - f0, out_channels, H, W), inside the slice's
// last block op; what it frees is released when that op ends.
using VaeFrameSink =
    std::function<core::Status(int64_t f0, int64_t f1, runtime::DeviceTensor frames)>;

class VaeDecoder {
 public:
  static core::StatusOr<VaeDecoder> Create(const VaeDecoderConfig& config, uint64_t seed,
                                           runtime::DeviceAllocator& allocator);

  const VaeDecoderConfig& config() const { return config_; }
  int64_t SpatialFactor() const { return int64_t{1} << (config_.channels.size() - 1); }
  // The halo of a tile in latent pixels (vae_tiling.h: TileHaloLatentPixels, 2).
  int64_t TileHalo() const;
  int64_t WeightBytes() const;

  // latent (Lf, latent_channels, h, w) is consumed; returns "vae.image" (F, out_channels,
  // h * SpatialFactor(), w * SpatialFactor()), or an empty tensor when `sink` is given.
  core::StatusOr<runtime::DeviceTensor> Decode(runtime::DeviceAllocator& allocator,
                                               runtime::DeviceTensor latent,
                                               const VaeGeometry& geometry,
                                               const runtime::OpContext& context,
                                               const VaeFrameSink& sink = {}) const;

 private:
  VaeDecoderConfig config_;
  std::vector<runtime::DeviceTensor> weights_;  // conv i: weights_[2 i] (w), weights_[2 i + 1] (b)
};

}  // namespace tessera::models
