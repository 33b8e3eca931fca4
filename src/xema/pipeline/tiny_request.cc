#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "xema/pipeline/tiny_pipeline.h"

// The tiny models and the rules of a request (tiny_pipeline.h): the specs, their validation,
// a request's checks, trace key, output size and minimum peak; the pipeline that runs them is
// tiny_pipeline.cc.

namespace tessera::xema {
namespace {

TinyModelSpec BaseSpec(const std::string& name) {
  TinyModelSpec s;
  s.name = name;
  s.dit.in_channels = s.latent_channels * s.patch * s.patch;
  s.dit.hidden = 256;
  s.dit.num_heads = 4;
  s.dit.num_layers = 4;
  s.dit.ffn_hidden = 1024;
  s.dit.init_seed = s.seed;
  return s;
}

core::Status SpecError(const std::string& field, const std::string& got, const std::string& want) {
  return core::InvalidArgument(fmt::format("spec.{}: got {}, {}", field, got, want));
}

}  // namespace

std::vector<std::string> TinyModelNames() { return {"tiny-t2i", "tiny-t2v"}; }

core::StatusOr<TinyModelSpec> TinyModel(const std::string& name) {
  if (name == "tiny-t2i") return BaseSpec(name);
  if (name == "tiny-t2v") {
    TinyModelSpec s = BaseSpec(name);
    s.video = true;
    s.temporal_factor = 4;
    return s;
  }
  return core::NotFound(
      fmt::format("model: got \"{}\", known models: {}", name, fmt::join(TinyModelNames(), ", ")));
}

core::Status ValidateSpec(const TinyModelSpec& s) {
  if (s.name.empty()) return SpecError("name", "\"\"", "must not be empty");
  if (s.latent_channels < 1 || s.latent_channels > 4096) {
    return SpecError("latent_channels", std::to_string(s.latent_channels), "must be in [1, 4096]");
  }
  if (s.patch < 1 || s.patch > 16) {
    return SpecError("patch", std::to_string(s.patch), "must be in [1, 16]");
  }
  if (s.temporal_factor < 1 || s.temporal_factor > 64 || (!s.video && s.temporal_factor != 1)) {
    return SpecError("temporal_factor", std::to_string(s.temporal_factor),
                     "must be 1 for an image model and in [1, 64] for a video model");
  }
  RETURN_IF_ERROR(models::ValidateSmallDitConfig(s.dit));
  if (s.dit.in_channels != s.latent_channels * s.patch * s.patch) {
    return SpecError("dit.in_channels", std::to_string(s.dit.in_channels),
                     fmt::format("must be latent_channels * patch * patch = {}",
                                 s.latent_channels * s.patch * s.patch));
  }
  RETURN_IF_ERROR(ValidateTextEncoderConfig(s.text));
  RETURN_IF_ERROR(ValidateVaeDecoderConfig(s.vae));
  if (s.vae.latent_channels != s.latent_channels) {
    return SpecError("vae.latent_channels", std::to_string(s.vae.latent_channels),
                     fmt::format("must equal latent_channels = {}", s.latent_channels));
  }
  if (s.vae.out_channels != 3) {
    return SpecError("vae.out_channels", std::to_string(s.vae.out_channels), "must be 3 (RGB)");
  }
  const int64_t factor = int64_t{1} << (s.vae.channels.size() - 1);
  if (s.spatial_factor != factor) {
    return SpecError("spatial_factor", std::to_string(s.spatial_factor),
                     fmt::format("must be 2^(VAE blocks - 1) = {}", factor));
  }
  return core::Status::Ok();
}

core::Status ValidateRequest(const TinyModelSpec& spec, const DiffusionRequest& r) {
  auto bad = [](const char* field, const std::string& got, const std::string& want) {
    return core::InvalidArgument(fmt::format("request.{}: got {}, {}", field, got, want));
  };
  if (r.model != spec.name) {
    return bad("model", fmt::format("\"{}\"", r.model),
               fmt::format("must be the loaded model \"{}\"", spec.name));
  }
  const int64_t multiple = spec.spatial_factor * spec.patch;
  for (const auto& [field, value] : {std::pair<const char*, int64_t>{"width", r.width},
                                     std::pair<const char*, int64_t>{"height", r.height}}) {
    if (value < 1 || value % multiple != 0 || value > kMaxRequestPixels) {
      return bad(field, std::to_string(value),
                 fmt::format("must be a positive multiple of {} (VAE factor {} x patch {}) up to "
                             "{} pixels",
                             multiple, spec.spatial_factor, spec.patch, kMaxRequestPixels));
    }
  }
  if (!spec.video && r.frames != 1) {
    return bad("frames", std::to_string(r.frames),
               fmt::format("must be 1 for the image model {}", spec.name));
  }
  if (spec.video && (r.frames < 1 || r.frames > kMaxRequestFrames ||
                     (r.frames - 1) % spec.temporal_factor != 0)) {
    return bad("frames", std::to_string(r.frames),
               fmt::format("must be {}k+1 in [1, {}] for the video model {}", spec.temporal_factor,
                           kMaxRequestFrames, spec.name));
  }
  if (r.steps < 1 || r.steps > kMaxRequestSteps) {
    return bad("steps", std::to_string(r.steps),
               fmt::format("must be in [1, {}]", kMaxRequestSteps));
  }
  if (!std::isfinite(r.guidance) || r.guidance < 0.0f || r.guidance > kMaxGuidance) {
    return bad("guidance", fmt::format("{}", r.guidance),
               fmt::format("must be finite and in [0, {}]", kMaxGuidance));
  }
  if (static_cast<int64_t>(r.prompt.size()) > kMaxPromptBytes) {
    return bad("prompt", fmt::format("{} bytes", r.prompt.size()),
               fmt::format("must be at most {} bytes", kMaxPromptBytes));
  }
  if (r.attention != models::AttentionMode::kFused &&
      r.attention != models::AttentionMode::kChunked) {
    return bad("attention", std::to_string(static_cast<int>(r.attention)),
               "must be kFused or kChunked");
  }
  if (r.attention_chunks < 1 || r.attention_chunks > kMaxAttentionChunks) {
    return bad("attention_chunks", std::to_string(r.attention_chunks),
               fmt::format("must be in [1, {}]", kMaxAttentionChunks));
  }
  if (r.vae_frame_slices < 1 || r.vae_frame_slices > r.frames) {
    return bad("vae_frame_slices", std::to_string(r.vae_frame_slices),
               fmt::format("must be in [1, frames = {}]", r.frames));
  }
  if (r.ffn_chunks < 1 || r.ffn_chunks > kMaxFfnChunks) {
    return bad("ffn_chunks", std::to_string(r.ffn_chunks),
               fmt::format("must be in [1, {}]", kMaxFfnChunks));
  }
  if (r.vae_tiles < 1 || r.vae_tiles > kMaxVaeTiles) {
    return bad("vae_tiles", std::to_string(r.vae_tiles),
               fmt::format("must be in [1, {}]", kMaxVaeTiles));
  }
  const int64_t mates = static_cast<int64_t>(r.batch_mates.size());
  if (mates > kMaxRequestBatch - 1) {
    return bad("batch_mates", fmt::format("{} mates", mates),
               fmt::format("must be at most {} (a batch of at most {} requests, each two DiT "
                           "sequences with cfg)",
                           kMaxRequestBatch - 1, kMaxRequestBatch));
  }
  for (int64_t i = 0; i < mates; ++i) {
    const BatchMate& m = r.batch_mates[static_cast<size_t>(i)];
    const std::string field = fmt::format("batch_mates[{}]", i);
    if (static_cast<int64_t>(m.prompt.size()) > kMaxPromptBytes) {
      return bad((field + ".prompt").c_str(), fmt::format("{} bytes", m.prompt.size()),
                 fmt::format("must be at most {} bytes", kMaxPromptBytes));
    }
    if (!std::isfinite(m.guidance) || m.guidance < 0.0f || m.guidance > kMaxGuidance) {
      return bad((field + ".guidance").c_str(), fmt::format("{}", m.guidance),
                 fmt::format("must be finite and in [0, {}]", kMaxGuidance));
    }
  }
  if (mates > 0 && r.offload.any()) {
    return core::InvalidArgument(fmt::format(
        "request.offload: not with a batch > 1 (got {} batch mates); clear the offload set or "
        "run the requests one at a time",
        mates));
  }
  return core::Status::Ok();
}

int64_t RequestBatch(const DiffusionRequest& r) {
  return 1 + static_cast<int64_t>(r.batch_mates.size());
}

TraceKey KeyOf(const DiffusionRequest& r) {
  TraceKey key;
  key.model = r.model;
  key.width = r.width;
  key.height = r.height;
  key.frames = r.frames;
  key.steps = r.steps;
  key.cfg = r.cfg;
  key.sp_degree = 1;
  key.dtype = "f32";
  key.batch = RequestBatch(r);
  return key;
}

int64_t OutputFloats(const DiffusionRequest& r) {
  return RequestBatch(r) * r.frames * 3 * r.height * r.width;
}

int64_t MinimumPeakBytes(const TinyModelSpec& spec, const DiffusionRequest& r) {
  const std::vector<int64_t>& ch = spec.vae.channels;
  const int64_t factor = spec.spatial_factor;
  const int64_t nf = r.frames / std::max<int64_t>(1, r.vae_frame_slices);  // first slice
  // The largest tile's span at full resolution (the whole plane untiled): its ops run while
  // the image is live, whichever tile it is (the first tile's last block allocates it).
  const int64_t halo = models::TileHaloLatentPixels(static_cast<int64_t>(ch.size()));
  const int64_t tiles = std::max<int64_t>(1, r.vae_tiles);
  auto largest_span = [&](int64_t extent) {
    int64_t most = 0;
    if (extent < 1) return most;  // not a valid request: no bound from the VAE
    for (const models::TileSpan& s : models::TileSpans(extent, tiles, halo))
      most = std::max(most, s.size());
    return most;
  };
  const int64_t latent_h = r.height / factor, latent_w = r.width / factor;
  const bool tiled = std::min(tiles, latent_h) * std::min(tiles, latent_w) > 1;
  const int64_t plane = largest_span(latent_h) * factor * largest_span(latent_w) * factor;
  // The last block (conv to RGB): its input, the im2col of one frame, the tile's RGB workspace
  // when tiled, the image (with offload.image: slice 0's frames).
  const int64_t c_last = ch.back(), oc = spec.vae.out_channels;
  const int64_t image_frames = r.offload.image ? nf : r.frames;
  const int64_t last = AlignBytes(4 * nf * c_last * plane) + AlignBytes(4 * 9 * c_last * plane) +
                       (tiled ? AlignBytes(4 * nf * oc * plane) : 0) +
                       AlignBytes(4 * image_frames * oc * r.height * r.width);
  // The block before it, at full resolution too when it upsamples: the upsampled input, its
  // im2col, the output.
  int64_t before = 0;
  if (ch.size() >= 2) {
    const int64_t c_in = ch[ch.size() - 2];
    before = AlignBytes(4 * nf * c_in * plane) + AlignBytes(4 * 9 * c_in * plane) +
             AlignBytes(4 * nf * c_last * plane);
  }
  int64_t bytes = std::max(last, before);
  // The weights as Load allocates them (the DiT's text projections left out): the text
  // encoder's embedding and layers, the DiT's parameters (both parked during the VAE with
  // idle_weights), the VAE's convolutions.
  const models::TextEncoderConfig& t = spec.text;
  if (!r.offload.idle_weights) {
    bytes += AlignBytes(4 * t.vocab * t.hidden) +
             t.num_layers * AlignBytes(4 * (4 * t.hidden * t.hidden + 5 * t.hidden +
                                            2 * t.hidden * t.ffn_hidden + t.ffn_hidden));
    bytes += AlignBytes(4 * static_cast<int64_t>(models::SmallDitParameterCount(spec.dit)));
  }
  int64_t c_in = spec.vae.latent_channels;
  for (size_t i = 0; i <= spec.vae.channels.size(); ++i) {
    const int64_t c_out =
        i < spec.vae.channels.size() ? spec.vae.channels[i] : spec.vae.out_channels;
    bytes += AlignBytes(4 * c_out * c_in * 9) + AlignBytes(4 * c_out);
    c_in = c_out;
  }
  return bytes;
}

}  // namespace tessera::xema
