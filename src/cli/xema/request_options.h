// The request template a `tessera xema` command runs on the tiny diffusion pipeline:
// --model tiny-t2i|tiny-t2v|FILE --size WxH [--frames F] --steps N [--cfg on|off] [--guidance G]
// [--prompt TEXT] [--seed S] [--attention fused|chunked] [--attention-chunks K]
// [--vae-slices N] [--ffn-chunks K] [--vae-tiles T]. Values are checked by the library
// (ValidateRequest), so the messages are the same from every entry point.
//
// Offload (`xema trace`): --offload text,latent,image,weights (a comma list of the request's
// OffloadSet items; an unknown item is refused, naming it) over a host tier whose link is
// --host-gbps GB/s (default: an H100 on PCIe 5.0, 55 GB/s) emulated at the time scale of the
// H100 against this core (runtime/time_scale.h, measured as Compass measures it), or
// --time-scale S to fix the scale.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "runtime/time_scale.h"
#include "xema/pipeline/host_tier.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::cli {

struct RequestArgs {
  std::string model = "tiny-t2i";
  std::string size = "64x64";
  int64_t frames = 1;
  int64_t steps = 4;
  std::string cfg = "on";
  double guidance = 4.0;
  std::string prompt = "a red cube on a wooden table";
  uint64_t seed = 1;
  std::string attention = "fused";
  int64_t attention_chunks = 1;
  int64_t vae_slices = 1;
  int64_t ffn_chunks = 1;
  int64_t vae_tiles = 1;
};

struct OffloadArgs {
  std::string offload;  // comma list; empty: none
  double host_gbps = xema::kH100Pcie5HostGbps;
  double time_scale = 0;  // 0: measure
};

void AddRequestOptions(CLI::App* app, RequestArgs* args);
void AddOffloadOptions(CLI::App* app, OffloadArgs* args);   // --offload and the link's
void AddHostLinkOptions(CLI::App* app, OffloadArgs* args);  // --host-gbps, --time-scale
// "text,latent" -> the set; InvalidArgument naming an unknown or repeated item.
core::StatusOr<xema::OffloadSet> ParseOffloadList(const std::string& list);
// The time scale of the host link's device (kHostLinkDevicePreset) against this core: fixed by
// --time-scale or measured.
core::StatusOr<runtime::TimeScale> HostLinkTimeScale(const OffloadArgs& args);
// The request for `spec` (its name becomes request.model), validated against it.
core::StatusOr<xema::DiffusionRequest> ToRequest(const RequestArgs& args,
                                                 const xema::TinyModelSpec& spec);

}  // namespace tessera::cli
