#include "xema/pipeline/vae_decoder.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "core/rng.h"
#include "xema/pipeline/conv2d.h"

namespace tessera::xema {
namespace {

core::Status CheckChannels(const std::string& field, int64_t value) {
  if (value < 1 || value > 4096) {
    return core::InvalidArgument(
        fmt::format("VaeDecoderConfig.{}: got {}, must be in [1, 4096]", field, value));
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
                                              DeviceAllocator& allocator) {
  RETURN_IF_ERROR(ValidateVaeDecoderConfig(config));
  VaeDecoder dec;
  dec.config_ = config;
  const int64_t n = static_cast<int64_t>(config.channels.size());
  const core::Rng root = core::Rng(seed).Fork(0x7ae);
  for (int64_t i = 0; i <= n; ++i) {
    const int64_t c_in = i == 0 ? config.latent_channels : config.channels[i - 1];
    const int64_t c_out = i == n ? config.out_channels : config.channels[i];
    ASSIGN_OR_RETURN(DeviceTensor w,
                     allocator.AllocateF32(c_out * c_in * 9, fmt::format("vae.conv{}.w", i),
                                           TensorKind::kWeight));
    ASSIGN_OR_RETURN(DeviceTensor b, allocator.AllocateF32(c_out, fmt::format("vae.conv{}.b", i),
                                                           TensorKind::kWeight));
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

int64_t VaeDecoder::WeightBytes() const {
  int64_t total = 0;
  for (const DeviceTensor& w : weights_) total += AlignBytes(w.bytes());
  return total;
}

core::StatusOr<DeviceTensor> VaeDecoder::Decode(DeviceAllocator& allocator, DeviceTensor latent,
                                                const VaeGeometry& g, const OpContext& context,
                                                const VaeFrameSink& sink) const {
  const int64_t lc = config_.latent_channels, oc = config_.out_channels;
  const int64_t n_blocks = static_cast<int64_t>(config_.channels.size());
  if (g.latent_frames < 1 || g.latent_height < 1 || g.latent_width < 1 || g.frames < 1 ||
      g.frames > kMaxDecodeFrames || g.temporal_factor < 1 || g.slices < 1 || g.slices > g.frames ||
      (g.frames - 1 + g.temporal_factor - 1) / g.temporal_factor >= g.latent_frames ||
      latent.f32_count() != g.latent_frames * lc * g.latent_height * g.latent_width) {
    return core::InvalidArgument(fmt::format(
        "VaeDecoder::Decode: inconsistent geometry: {} latent frames of {}x{} ({} floats given), "
        "{} frames (at most {}), temporal factor {}, {} slices (1 to frames)",
        g.latent_frames, g.latent_height, g.latent_width, latent.f32_count(), g.frames,
        kMaxDecodeFrames, g.temporal_factor, g.slices));
  }
  const int64_t lat_plane = lc * g.latent_height * g.latent_width;
  const int64_t full_h = g.latent_height * SpatialFactor(),
                full_w = g.latent_width * SpatialFactor();
  DeviceTensor image;
  std::array<const float*, kMaxDecodeFrames> inputs{};
  for (int64_t s = 0; s < g.slices; ++s) {
    const int64_t f0 = s * g.frames / g.slices, f1 = (s + 1) * g.frames / g.slices;
    const int64_t nf = f1 - f0;
    const std::string prefix = g.slices == 1 ? std::string("vae") : fmt::format("vae.slice{}", s);
    DeviceTensor act;
    int64_t h = g.latent_height, w = g.latent_width;
    for (int64_t b = 0; b <= n_blocks; ++b) {
      const std::string name = fmt::format("{}.block{}", prefix, b);
      OpScope op(allocator, name, context);
      const int64_t c_in = b == 0 ? lc : config_.channels[b - 1];
      const int64_t c_out = b == n_blocks ? oc : config_.channels[b];
      const float* weight = weights_[2 * b].f32();
      const float* bias = weights_[2 * b + 1].f32();
      DeviceTensor up;
      const float* conv_in = act.empty() ? nullptr : act.f32();
      std::span<const float* const> image_inputs;
      if (b == 0) {
        for (int64_t f = f0; f < f1; ++f) {
          const int64_t lf = (f + g.temporal_factor - 1) / g.temporal_factor;
          inputs[f - f0] = latent.f32() + lf * lat_plane;
        }
        image_inputs = std::span<const float* const>(inputs.data(), static_cast<size_t>(nf));
      } else if (b < n_blocks) {
        ASSIGN_OR_RETURN(
            up, allocator.AllocateF32(nf * c_in * 4 * h * w, name + ".up", TensorKind::kWorkspace));
        UpsampleNearest2x(act.f32(), nf * c_in, h, w, up.f32());
        act.Reset();
        conv_in = up.f32();
        h *= 2;
        w *= 2;
      }
      DeviceTensor out;
      float* conv_out = nullptr;
      if (b == n_blocks && sink) {
        ASSIGN_OR_RETURN(out, allocator.AllocateF32(nf * oc * h * w, prefix + ".frames",
                                                    TensorKind::kActivation));
        conv_out = out.f32();
      } else if (b == n_blocks) {
        if (image.empty()) {
          ASSIGN_OR_RETURN(image, allocator.AllocateF32(g.frames * oc * full_h * full_w,
                                                        "vae.image", TensorKind::kActivation));
        }
        conv_out = image.f32() + f0 * oc * full_h * full_w;
      } else {
        ASSIGN_OR_RETURN(
            out, allocator.AllocateF32(nf * c_out * h * w, name + ".out", TensorKind::kActivation));
        conv_out = out.f32();
      }
      const Conv3x3Shape shape{nf, c_in, c_out, h, w};
      RETURN_IF_ERROR(
          Conv3x3(allocator, name, shape, conv_in, weight, bias, conv_out, image_inputs));
      if (b < n_blocks) SiluInPlace(conv_out, nf * c_out * h * w);
      up.Reset();
      if (b == n_blocks && sink) RETURN_IF_ERROR(sink(f0, f1, std::move(out)));
      act = std::move(out);  // the last block's input is freed here (out is empty)
      if (b == 0 && s == g.slices - 1) latent.Reset();
      op.Count(shape.Flops(), 4.0 * static_cast<double>(nf * (c_in + c_out) * h * w));
    }
  }
  return image;
}

}  // namespace tessera::xema
