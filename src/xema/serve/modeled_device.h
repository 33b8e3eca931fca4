// The modeled devices of Xema's planner at paper scale (`tessera xema plan --device NAME`):
// GPU presets whose figures come from datasheets, labelled "modeled", and the analytic
// request (xema/analytic_trace.h) a template of the public models runs as on one of them.
//
//   rtx4090-24g  RTX 4090: 24 GB, 165 TFLOP/s dense bf16 (fp32 accumulate); PCIe 4 x16 host link
//                at 25 GB/s achieved; no NVLink and no peer-to-peer: SP members exchange
//                through the host at 20 GB/s;
//   l40s-48g     L40S: 48 GB, 362 TFLOP/s dense bf16; PCIe 4 at 25 GB/s to the host and
//                between GPUs;
//   h100-80g     H100 SXM: 80 GB, 989 TFLOP/s dense bf16, NVLink 4 at 450 GB/s per direction,
//                PCIe 5 host link at 55 GB/s achieved;
//   h200-141g    H200 SXM: 141 GB, the H100's tensor cores and links.
// Achieved compute is the H100's 400 TFLOP/s share of its datasheet rate (40.4%) applied to
// each: rtx4090 67, l40s 146, h100 and h200 400 TFLOP/s (the H200's faster memory, each
// card's SM count and memory bandwidth are not modeled). Memory sizes are decimal GB.
//
// A modeled template is a DiffusionRequest of an analytic model (flux2-dev, cogvideox-5b,
// ltx-2) whose mitigations are those the analytic traces model: ffn_chunks, vae_tiles and
// offload.idle_weights (the text encoder's weights in host memory, streamed per layer); every
// other mitigation field at its default. Thread-safety: pure functions over constants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "xema/analytic_trace.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema {

struct ModeledDevice {
  std::string name;
  int64_t memory_bytes = 0;
  double link_bytes_per_s = 0;  // between SP members, per direction
  double host_bytes_per_s = 0;  // host -> device
  double flops_per_s = 0;       // achieved bf16 when the GPU is full
};

// {"rtx4090-24g", "l40s-48g", "h100-80g", "h200-141g"}
std::vector<std::string> ModeledDeviceNames();
// InvalidArgument "device: got 'x', must be cpu, h100-80g or h200-141g".
core::StatusOr<ModeledDevice> FindModeledDevice(const std::string& name);

// The analytic request of `request` at SP degree `sp_degree` on `device`.
AnalyticRequest ToAnalyticRequest(const DiffusionRequest& request, int sp_degree,
                                  const ModeledDevice& device);

// OK, or InvalidArgument naming the field: an unknown model, a shape or SP degree the model
// does not take (AnalyticTrace's checks), a mitigation the analytic traces do not model.
core::Status ValidateModeledTemplate(const DiffusionRequest& request, int sp_degree);

}  // namespace tessera::xema
