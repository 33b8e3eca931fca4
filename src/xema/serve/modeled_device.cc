#include "xema/serve/modeled_device.h"

#include <fmt/format.h>

namespace tessera::xema {
namespace {

const std::vector<ModeledDevice>& Devices() {
  static const std::vector<ModeledDevice> devices = {
      {"rtx4090-24g", 24'000'000'000, 20e9, 25e9, 67e12},
      {"l40s-48g", 48'000'000'000, 25e9, 25e9, 146e12},
      {"h100-80g", 80'000'000'000, 450e9, 55e9, 4e14},
      {"h200-141g", 141'000'000'000, 450e9, 55e9, 4e14},
  };
  return devices;
}

}  // namespace

std::vector<std::string> ModeledDeviceNames() {
  std::vector<std::string> names;
  for (const ModeledDevice& d : Devices()) names.push_back(d.name);
  return names;
}

core::StatusOr<ModeledDevice> FindModeledDevice(const std::string& name) {
  for (const ModeledDevice& d : Devices())
    if (d.name == name) return d;
  return core::InvalidArgument(fmt::format("device: got '{}', must be cpu or one of {}", name,
                                           fmt::join(ModeledDeviceNames(), ", ")));
}

AnalyticRequest ToAnalyticRequest(const DiffusionRequest& r, int sp_degree,
                                  const ModeledDevice& device) {
  AnalyticRequest a;
  a.model = r.model;
  a.width = r.width;
  a.height = r.height;
  a.frames = r.frames;
  a.steps = r.steps;
  a.cfg = r.cfg ? 1 : 0;
  a.fused_attention = r.attention == models::AttentionMode::kFused;
  a.sp_degree = sp_degree;
  a.link_bytes_per_s = device.link_bytes_per_s;
  a.ffn_chunks = r.ffn_chunks;
  a.vae_tiles = r.vae_tiles;
  a.encoder_on_host = r.offload.idle_weights;
  a.host_bytes_per_s = device.host_bytes_per_s;
  a.batch = RequestBatch(r);
  a.flops_per_s = device.flops_per_s;
  return a;
}

core::Status ValidateModeledTemplate(const DiffusionRequest& r, int sp_degree) {
  if (r.attention != models::AttentionMode::kFused || r.attention_chunks != 1 ||
      r.vae_frame_slices != 1 || r.offload.text_context || r.offload.latent || r.offload.image) {
    return core::InvalidArgument(
        "mitigations: a modeled template takes ffn_chunks, vae_tiles and offload [\"weights\"] "
        "only (fused attention, no frame slices, no other offload)");
  }
  const ModeledDevice& any = Devices().front();
  return AnalyticTrace(ToAnalyticRequest(r, sp_degree, any)).status();
}

}  // namespace tessera::xema
