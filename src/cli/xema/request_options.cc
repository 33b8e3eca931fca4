#include "cli/xema/request_options.h"

#include <sstream>

#include "cli/options.h"
#include "xema/analytic_trace.h"

namespace tessera::cli {

void AddRequestOptions(CLI::App* app, RequestArgs* a) {
  app->add_option("--model", a->model, "tiny-t2i, tiny-t2v or a model JSON file")
      ->capture_default_str();
  app->add_option("--size", a->size, "WIDTHxHEIGHT in pixels (multiples of 16)")
      ->capture_default_str();
  app->add_option("--frames", a->frames, "video frames, 4k+1 (1 for images)")
      ->transform(Integer(1, 1025))
      ->capture_default_str();
  app->add_option("--steps", a->steps, "denoising steps")
      ->transform(Integer(1, 1000))
      ->capture_default_str();
  app->add_option("--cfg", a->cfg, "classifier-free guidance: on or off")->capture_default_str();
  app->add_option("--guidance", a->guidance, "guidance scale")
      ->check(Number(0, 100))
      ->capture_default_str();
  // An empty prompt is a prompt (unconditional generation), not a missing value.
  AllowEmpty(app->add_option("--prompt", a->prompt, "the text prompt ('' for none)")
                 ->capture_default_str());
  app->add_option("--seed", a->seed, "initial noise seed")->check(Seed())->capture_default_str();
  app->add_option("--attention", a->attention,
                  "fused (tiled kernel) or chunked (scores materialised per query chunk)")
      ->capture_default_str();
  app->add_option("--attention-chunks", a->attention_chunks,
                  "query chunks with --attention chunked")
      ->transform(Integer(1, 4096))
      ->capture_default_str();
  app->add_option("--vae-slices", a->vae_slices, "video: decode the frames in this many slices")
      ->transform(Integer(1, 1025))
      ->capture_default_str();
  app->add_option("--ffn-chunks", a->ffn_chunks,
                  "run the DiT's FFN over this many token chunks (one reused workspace)")
      ->transform(Integer(1, xema::kMaxFfnChunks))
      ->capture_default_str();
  app->add_option("--vae-tiles", a->vae_tiles,
                  "decode a TxT grid of latent tiles with exact halos (clamped to the latent size)")
      ->transform(Integer(1, xema::kMaxVaeTiles))
      ->capture_default_str();
}

void AddOffloadOptions(CLI::App* app, OffloadArgs* a) {
  app->add_option("--offload", a->offload,
                  "park tensors in host memory while idle: a comma list of text, latent, image, "
                  "weights (exact; costs copy time)");
  AddHostLinkOptions(app, a);
}

void AddHostLinkOptions(CLI::App* app, OffloadArgs* a) {
  app->add_option("--host-gbps", a->host_gbps,
                  "device<->host link GB/s per direction (default: H100 on PCIe 5.0)")
      ->check(Number(1e-3, 1e6))
      ->capture_default_str();
  app->add_option("--time-scale", a->time_scale,
                  "emulated seconds per device second for the host link (default: measured "
                  "from this core's GEMM against an H100)")
      ->check(Number(1e-3, 1e7));
}

core::StatusOr<xema::OffloadSet> ParseOffloadList(const std::string& list) {
  xema::OffloadSet set;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    bool* flag = xema::OffloadFlag(set, item);
    if (flag == nullptr) {
      return core::InvalidArgument("--offload: got '" + item +
                                   "', items must be text, latent, image or weights");
    }
    if (*flag) return core::InvalidArgument("--offload: '" + item + "' is given twice");
    *flag = true;
  }
  if (!list.empty() && list.back() == ',') {
    return core::InvalidArgument("--offload: got '', items must be text, latent, image or weights");
  }
  return set;
}

core::StatusOr<runtime::TimeScale> HostLinkTimeScale(const OffloadArgs& a) {
  return xema::HostLinkTimeScale(a.time_scale);
}

core::StatusOr<xema::DiffusionRequest> ToRequest(const RequestArgs& a,
                                                 const xema::TinyModelSpec& spec) {
  xema::DiffusionRequest r;
  r.model = spec.name;
  ASSIGN_OR_RETURN(auto size, xema::ParseImageSize(a.size));
  r.width = size.first;
  r.height = size.second;
  r.frames = a.frames;
  r.steps = a.steps;
  if (a.cfg != "on" && a.cfg != "off") {
    return core::InvalidArgument("--cfg: got '" + a.cfg + "', must be on or off");
  }
  r.cfg = a.cfg == "on";
  r.guidance = static_cast<float>(a.guidance);
  r.prompt = a.prompt;
  r.seed = a.seed;
  if (a.attention == "fused") {
    r.attention = models::AttentionMode::kFused;
  } else if (a.attention == "chunked") {
    r.attention = models::AttentionMode::kChunked;
  } else {
    return core::InvalidArgument("--attention: got '" + a.attention +
                                 "', must be fused or chunked");
  }
  r.attention_chunks = a.attention_chunks;
  r.vae_frame_slices = a.vae_slices;
  r.ffn_chunks = a.ffn_chunks;
  r.vae_tiles = a.vae_tiles;
  RETURN_IF_ERROR(xema::ValidateRequest(spec, r));
  return r;
}

}  // namespace tessera::cli
