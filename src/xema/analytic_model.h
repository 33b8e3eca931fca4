// AnalyticModel: the shape of a real text-to-image / text-to-video diffusion pipeline (text
// encoder, DiT, VAE decoder) that Xema's analytic traces (analytic_trace.h) are built from,
// read from its "diffusion-pipeline" model file (models/model_presets.h, data/models/):
//   "text_encoder": {"params", "layers", "hidden", "ffn", "tokens"}
//   "transformer":  {"params", "double_blocks", "single_blocks", "hidden", "heads", "ffn",
//                    "text_tokens_in_attention"}
//   "latent":       {"channels", "vae_spatial", "pixels_per_token", "frame_div"}
//   "vae":          {"params", "up_blocks": [{"channels", "spatial_div", "time_div"}, ...]}
//   "default_cfg":  true | false
// Every field is checked against a plausible range; unknown keys are refused.
// Thread-safety: LoadAnalyticModel reads each file once (a function-local cache, thread-safe
// initialisation) and returns a pointer to the immutable cached value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::xema {

struct VaeUpBlock {
  int64_t channels = 0;
  int64_t spatial_div = 1;  // output pixels = (W / div) x (H / div)
  int64_t time_div = 1;     // output frames = ceil(F / div)
};

struct AnalyticModel {
  std::string name;
  // Text encoder.
  double enc_params = 0;
  int enc_layers = 0;
  int64_t enc_hidden = 0, enc_ffn = 0, enc_tokens = 0;
  // DiT.
  double dit_params = 0;
  int double_blocks = 0, single_blocks = 0;  // double blocks are named "double" (MMDiT)
  int64_t hidden = 0, heads = 0, ffn = 0;
  int64_t pixels_per_token = 1;  // VAE spatial factor x patch
  int64_t frame_div = 1;         // VAE temporal factor (1 for images)
  int64_t text_tokens_in_attention = 0;
  int64_t latent_channels = 0, vae_spatial = 1;
  double vae_params = 0;
  std::vector<VaeUpBlock> vae;
  bool default_cfg = false;
};

// The models the analytic traces offer, in the order messages list them.
std::vector<std::string> AnalyticModelNames();

// The model `name` (one of AnalyticModelNames()). NotFound for another name; InvalidArgument
// naming the file and field for a malformed model file.
core::StatusOr<const AnalyticModel*> LoadAnalyticModel(const std::string& name);

}  // namespace tessera::xema
