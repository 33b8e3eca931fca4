#include "models/vae_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "models/conv2d.h"
#include "models/vae_tiling.h"

namespace tessera::models {
namespace {

core::Status CheckChannels(const std::string& field, int64_t value) {
  if (value < 1 || value > 4096) {
    return core::InvalidArgument(
        fmt::format("VaeDecoderConfig.{}: got {}, must be in [1, 4096]", field, value));
  }
  return core::Status::Ok();
}

// One pass of the whole decoder: the frames [f0, f1) of one slice over one tile.
struct TileJob {
  std::string prefix;  // op names: "<prefix>.block<b>"
  int64_t f0 = 0, f1 = 0;
  TileSpan y, x;              // latent rows and columns: the span decoded, the core kept
  bool tiled = false;         // false: the whole plane (no crop, no halo, written in place)
  bool frees_latent = false;  // the latent's last reader: block 0 frees it
  // Where block n writes: `dest` (allocated by the first writer as dest_name, dest_frames
  // frames, its frame 0 being frame dest_f0), handed to the sink after the write when set.
  std::string dest_name;
  int64_t dest_frames = 0, dest_f0 = 0;
  const VaeFrameSink* hand_to = nullptr;
};

core::Status DecodeTile(runtime::DeviceAllocator& allocator, const VaeDecoderConfig& config,
                        std::span<const runtime::DeviceTensor> weights, const VaeGeometry& g,
                        const TileJob& job, runtime::DeviceTensor& latent,
                        runtime::DeviceTensor& image,
                        const runtime::OpContext& context) {  // image: the job's destination
  const int64_t lc = config.latent_channels, oc = config.out_channels;
  const int64_t n_blocks = static_cast<int64_t>(config.channels.size());
  const int64_t factor = int64_t{1} << (n_blocks - 1);
  const int64_t nf = job.f1 - job.f0;
  const int64_t lat_plane = lc * g.latent_height * g.latent_width;
  const int64_t full_h = g.latent_height * factor, full_w = g.latent_width * factor;
  std::array<const float*, kMaxDecodeFrames> inputs{};
  runtime::DeviceTensor act;
  int64_t h = job.y.size(), w = job.x.size();  // at the current block's resolution
  for (int64_t b = 0; b <= n_blocks; ++b) {
    const std::string name = fmt::format("{}.block{}", job.prefix, b);
    runtime::OpScope op(allocator, name, context);
    const int64_t c_in = b == 0 ? lc : config.channels[b - 1];
    const int64_t c_out = b == n_blocks ? oc : config.channels[b];
    const float* weight = weights[2 * b].f32();
    const float* bias = weights[2 * b + 1].f32();
    runtime::DeviceTensor up, crop;
    const float* conv_in = act.empty() ? nullptr : act.f32();
    std::span<const float* const> image_inputs;
    if (b == 0 && job.tiled) {
      // The tile's span of each frame's latent frame, copied out contiguously.
      ASSIGN_OR_RETURN(crop, allocator.AllocateF32(nf * lc * h * w, name + ".crop",
                                                   runtime::TensorKind::kWorkspace));
      for (int64_t f = job.f0; f < job.f1; ++f) {
        const int64_t lf = (f + g.temporal_factor - 1) / g.temporal_factor;
        for (int64_t c = 0; c < lc; ++c) {
          const float* src = latent.f32() + lf * lat_plane + c * g.latent_height * g.latent_width;
          float* dst = crop.f32() + ((f - job.f0) * lc + c) * h * w;
          for (int64_t y = 0; y < h; ++y) {
            const float* row = src + (job.y.begin + y) * g.latent_width + job.x.begin;
            std::copy(row, row + w, dst + y * w);
          }
        }
      }
      conv_in = crop.f32();
    } else if (b == 0) {
      for (int64_t f = job.f0; f < job.f1; ++f) {
        const int64_t lf = (f + g.temporal_factor - 1) / g.temporal_factor;
        inputs[f - job.f0] = latent.f32() + lf * lat_plane;
      }
      image_inputs = std::span<const float* const>(inputs.data(), static_cast<size_t>(nf));
    } else if (b < n_blocks) {
      ASSIGN_OR_RETURN(up, allocator.AllocateF32(nf * c_in * 4 * h * w, name + ".up",
                                                 runtime::TensorKind::kWorkspace));
      UpsampleNearest2x(act.f32(), nf * c_in, h, w, up.f32());
      act.Reset();
      conv_in = up.f32();
      h *= 2;
      w *= 2;
    }
    runtime::DeviceTensor out;
    float* conv_out = nullptr;
    if (b == n_blocks) {
      if (image.empty()) {
        ASSIGN_OR_RETURN(
            image, allocator.AllocateF32(job.dest_frames * oc * full_h * full_w, job.dest_name,
                                         runtime::TensorKind::kActivation));
      }
      if (job.tiled) {
        ASSIGN_OR_RETURN(out, allocator.AllocateF32(nf * oc * h * w, name + ".rgb",
                                                    runtime::TensorKind::kWorkspace));
        conv_out = out.f32();
      } else {
        conv_out = image.f32() + (job.f0 - job.dest_f0) * oc * full_h * full_w;
      }
    } else {
      ASSIGN_OR_RETURN(out, allocator.AllocateF32(nf * c_out * h * w, name + ".out",
                                                  runtime::TensorKind::kActivation));
      conv_out = out.f32();
    }
    const Conv3x3Shape shape{nf, c_in, c_out, h, w};
    RETURN_IF_ERROR(Conv3x3(allocator, name, shape, conv_in, weight, bias, conv_out, image_inputs));
    if (b < n_blocks) SiluInPlace(conv_out, nf * c_out * h * w);
    if (b == n_blocks && job.tiled) {
      // Only the core is exact: copy its pixels (the latent core scaled by the factor).
      const int64_t y0 = (job.y.core_begin - job.y.begin) * factor;
      const int64_t x0 = (job.x.core_begin - job.x.begin) * factor;
      const int64_t core_h = job.y.core_size() * factor, core_w = job.x.core_size() * factor;
      for (int64_t p = 0; p < nf * oc; ++p) {  // planes: (frame, channel)
        const float* src = out.f32() + p * h * w + y0 * w + x0;
        float* dst = image.f32() + ((job.f0 - job.dest_f0) * oc + p) * full_h * full_w +
                     job.y.core_begin * factor * full_w + job.x.core_begin * factor;
        for (int64_t y = 0; y < core_h; ++y) {
          std::copy(src + y * w, src + y * w + core_w, dst + y * full_w);
        }
      }
      out.Reset();
    }
    if (b == n_blocks && job.hand_to != nullptr) {
      RETURN_IF_ERROR((*job.hand_to)(job.f0, job.f1, std::move(image)));
      image = runtime::DeviceTensor();
    }
    up.Reset();
    crop.Reset();
    act = std::move(out);  // the last block's input is freed here (out is empty)
    if (b == 0 && job.frees_latent) latent.Reset();
    op.Count(shape.Flops(), 4.0 * static_cast<double>(nf * (c_in + c_out) * h * w));
  }
  return core::Status::Ok();
}

}  // namespace

core::Status ValidateVaeDecoderConfig(const VaeDecoderConfig& c) {
  RETURN_IF_ERROR(CheckChannels("latent_channels", c.latent_channels));
  RETURN_IF_ERROR(CheckChannels("out_channels", c.out_channels));
  if (c.channels.empty() || c.channels.size() > 8) {
    return core::InvalidArgument(fmt::format(
        "VaeDecoderConfig.channels: got {} block widths, must have 1 to 8", c.channels.size()));
  }
  for (size_t i = 0; i < c.channels.size(); ++i) {
    RETURN_IF_ERROR(CheckChannels(fmt::format("channels[{}]", i), c.channels[i]));
  }
  return core::Status::Ok();
}

core::StatusOr<VaeDecoder> VaeDecoder::Create(const VaeDecoderConfig& config, uint64_t seed,
                                              runtime::DeviceAllocator& allocator) {
  RETURN_IF_ERROR(ValidateVaeDecoderConfig(config));
  VaeDecoder dec;
  dec.config_ = config;
  const int64_t n = static_cast<int64_t>(config.channels.size());
  const core::Rng root = core::Rng(seed).Fork(0x7ae);
  for (int64_t i = 0; i <= n; ++i) {
    const int64_t c_in = i == 0 ? config.latent_channels : config.channels[i - 1];
    const int64_t c_out = i == n ? config.out_channels : config.channels[i];
    ASSIGN_OR_RETURN(runtime::DeviceTensor w,
                     allocator.AllocateF32(c_out * c_in * 9, fmt::format("vae.conv{}.w", i),
                                           runtime::TensorKind::kWeight));
    ASSIGN_OR_RETURN(
        runtime::DeviceTensor b,
        allocator.AllocateF32(c_out, fmt::format("vae.conv{}.b", i), runtime::TensorKind::kWeight));
    core::Rng rng = root.Fork(i);
    const double std_dev = 1.0 / std::sqrt(static_cast<double>(9 * c_in));
    for (int64_t j = 0; j < w.f32_count(); ++j)
      w.f32()[j] = static_cast<float>(std_dev * rng.Normal());
    std::fill_n(b.f32(), c_out, 0.0f);
    dec.weights_.push_back(std::move(w));
    dec.weights_.push_back(std::move(b));
  }
  return dec;
}

int64_t VaeDecoder::TileHalo() const {
  return TileHaloLatentPixels(static_cast<int64_t>(config_.channels.size()));
}

int64_t VaeDecoder::WeightBytes() const {
  int64_t total = 0;
  for (const runtime::DeviceTensor& w : weights_) total += runtime::AlignBytes(w.bytes());
  return total;
}

core::StatusOr<runtime::DeviceTensor> VaeDecoder::Decode(runtime::DeviceAllocator& allocator,
                                                         runtime::DeviceTensor latent,
                                                         const VaeGeometry& g,
                                                         const runtime::OpContext& context,
                                                         const VaeFrameSink& sink) const {
  const int64_t lc = config_.latent_channels;
  if (g.latent_frames < 1 || g.latent_height < 1 || g.latent_width < 1 || g.frames < 1 ||
      g.frames > kMaxDecodeFrames || g.temporal_factor < 1 || g.slices < 1 || g.slices > g.frames ||
      g.tiles < 1 ||
      (g.frames - 1 + g.temporal_factor - 1) / g.temporal_factor >= g.latent_frames ||
      latent.f32_count() != g.latent_frames * lc * g.latent_height * g.latent_width) {
    return core::InvalidArgument(fmt::format(
        "VaeDecoder::Decode: inconsistent geometry: {} latent frames of {}x{} ({} floats given), "
        "{} frames (at most {}), temporal factor {}, {} slices (1 to frames), {} tiles (>= 1)",
        g.latent_frames, g.latent_height, g.latent_width, latent.f32_count(), g.frames,
        kMaxDecodeFrames, g.temporal_factor, g.slices, g.tiles));
  }
  const int64_t halo = TileHalo();
  const std::vector<TileSpan> rows = TileSpans(g.latent_height, g.tiles, halo);
  const std::vector<TileSpan> cols = TileSpans(g.latent_width, g.tiles, halo);
  const bool tiled = rows.size() * cols.size() > 1;
  runtime::DeviceTensor image;  // "vae.image", or one slice's frames with a sink
  for (int64_t s = 0; s < g.slices; ++s) {
    const std::string slice_prefix = g.slices > 1 ? fmt::format("{}.slice{}", g.name, s) : g.name;
    for (size_t i = 0; i < rows.size(); ++i) {
      for (size_t j = 0; j < cols.size(); ++j) {
        TileJob job;
        job.prefix = slice_prefix;
        if (tiled) job.prefix += fmt::format(".tile{}_{}", i, j);
        job.f0 = s * g.frames / g.slices;
        job.f1 = (s + 1) * g.frames / g.slices;
        job.y = rows[i];
        job.x = cols[j];
        job.tiled = tiled;
        const bool last_tile = i + 1 == rows.size() && j + 1 == cols.size();
        job.frees_latent = s == g.slices - 1 && last_tile;
        if (sink) {
          job.dest_name = slice_prefix + ".frames";
          job.dest_frames = job.f1 - job.f0;
          job.dest_f0 = job.f0;
          if (last_tile) job.hand_to = &sink;
        } else {
          job.dest_name = g.name + ".image";
          job.dest_frames = g.frames;
        }
        RETURN_IF_ERROR(DecodeTile(allocator, config_, weights_, g, job, latent, image, context));
      }
    }
  }
  return image;
}

}  // namespace tessera::models
