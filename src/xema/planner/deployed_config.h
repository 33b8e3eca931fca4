// The serving configurations people deploy today, modeled at paper scale from the same analytic
// traces (xema/analytic_trace.h) and device presets (xema/serve/modeled_device.h) as Xema's
// planner, so that `tessera xema deployed` compares them with Xema on equal terms. Each runs one
// request at a time per GPU (or per SP group): a diffusers pipeline object and an xDiT engine
// serve requests in turn. Every allocation goes through PyTorch's caching allocator, replayed
// (xema/caching_allocator.h, default policy): a configuration's footprint on a device is that
// replay's peak reserved bytes, weights included; a template whose footprint exceeds the
// device's memory runs out of memory on every request. What each library does, as modeled:
//
//   diffusers-model-offload       enable_model_cpu_offload(): accelerate hooks keep each
//       component (text encoder, transformer, VAE) in host memory and move it whole to the GPU
//       when its forward starts, after moving the previous one back; at the end of a call every
//       component is back on the host. Per request: the three components go to the device and
//       back once each (2 x their bytes over the host link), not overlapped with compute. On the
//       device at a time: one component's weights plus the activations of its phase.
//   diffusers-sequential-offload  enable_sequential_cpu_offload(): every leaf module's weights
//       are copied to the GPU when it runs and dropped after (the host copy stays): the
//       transformer's weights cross the host link at every denoising step, synchronously.
//       Modeled at block granularity (an encoder layer, a DiT block, the VAE decoder).
//   vae-slicing-tiling            enable_vae_slicing() + enable_vae_tiling(): every weight
//       resident; the VAE decodes in tiles of at most 512 pixels a side (t x t tiles,
//       t = ceil(max(width, height) / 512); the analytic trace's 1/8 overlap per side, its
//       recompute); slicing decodes the batch one image at a time (a batch of one already is).
//   xdit-fixed-sp:D               xDiT with ulysses_degree D for every template: each of the D
//       GPUs holds every weight; the DiT runs sequence-parallel over D (four all-to-alls per
//       block at the device's link speed); devices / D groups. No other mitigation.
//   fsdp-sharded-weights:D        sequence parallel over D with every weight sharded over the
//       group (FSDP FULL_SHARD): a GPU holds 1/D of each weight; each layer's weights are
//       all-gathered ((D - 1) / D of them at the link speed) before it runs, prefetched during
//       the previous layer (its time is max(compute, gather)) and freed after it: two gathered
//       layers live at a time.
// The host link's bytes per second are the device preset's (pinned-memory speed) unless
// host_bytes_per_s says otherwise: accelerate's hooks copy from pageable memory, which is
// slower, so at the device's rate the offload configurations are modeled faster than they run. D
// defaults to every device; it must divide the devices and the model's attention heads.
//
// Errors: InvalidArgument "policy: got 'x', must be one of ..." for an unknown name, "policy
// xdit-fixed-sp:3: the degree must divide the 8 devices" for a bad degree; AnalyticTrace's
// errors for a template. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "xema/memory_trace.h"
#include "xema/pipeline/tiny_pipeline.h"
#include "xema/serve/modeled_device.h"

namespace tessera::xema {

enum class DeployedKind {
  kModelOffload,
  kSequentialOffload,
  kVaeSlicingTiling,
  kXditFixedSp,
  kFsdpShardedWeights,
};

struct DeployedConfig {
  DeployedKind kind = DeployedKind::kModelOffload;
  int degree = 1;  // the SP group of xdit-fixed-sp and fsdp-sharded-weights; 1 for the others
  // The host link of the two offload configurations; 0: the device's (pinned) rate.
  double host_bytes_per_s = 0;
};

// The names as ParseDeployedConfig takes them ("xdit-fixed-sp[:D]", "fsdp-sharded-weights[:D]").
std::vector<std::string> DeployedConfigNames();
// "diffusers-model-offload", "xdit-fixed-sp:8", ...
std::string DeployedConfigName(const DeployedConfig& config);
// A name of DeployedConfigNames(); D (default `devices`) must divide `devices`.
core::StatusOr<DeployedConfig> ParseDeployedConfig(const std::string& text, int devices);
// Every configuration at `devices` GPUs (D = devices; fsdp-sharded-weights only with >= 2).
std::vector<DeployedConfig> AllDeployedConfigs(int devices);

// The trace of one request as `config` runs it on `device` (member 0's under SP).
core::StatusOr<MemoryTrace> DeployedTrace(const DeployedConfig& config,
                                          const DiffusionRequest& request,
                                          const ModeledDevice& device);

struct DeployedTemplate {
  bool fits = false;
  int64_t device_bytes = 0;      // the caching allocator's peak reserved bytes on one GPU
  int64_t live_peak_bytes = 0;   // the most bytes live at one op (weights included)
  double solo_s = 0;             // one request alone on its GPU or group
  double weight_transfer_s = 0;  // of which weight copies not hidden behind compute
  int sp_degree = 1;
};

core::StatusOr<DeployedTemplate> ModelDeployedTemplate(const DeployedConfig& config,
                                                       const DiffusionRequest& request,
                                                       const ModeledDevice& device);

}  // namespace tessera::xema
