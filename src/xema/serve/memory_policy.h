// How a serving device manages its memory budget (Xema part 2). Allocator x mitigations:
//   none     PyTorch's default: a caching allocator (CachingDeviceAllocator, policy "pytorch")
//            whose device limit is the budget, the request as sent; out of memory fails (507).
//   static   one static layout per request template (model, size, frames, steps, cfg): the
//            first request of a template is recorded (RecordRequest), a tflite layout planned,
//            and every later request of the template runs from an arena of exactly that size.
//   offload  the caching allocator with every offload always on (diffusers' model offload /
//            vLLM-Omni's layerwise offload): text context, latent, image and idle weights.
//   tiling   the caching allocator with VAE slicing and tiling always on (every frame its own
//            slice, kAlwaysOnVaeTiles tiles per side) and materialised attention in
//            kAlwaysOnAttentionChunks query chunks (diffusers' enable_vae_slicing,
//            enable_vae_tiling and sliced attention).
//   caching  the caching allocator with xema's planned mitigations (mitigation_planner.h: per
//            template, the least added time that fits the budget).
//   xema     xema's planned mitigations and a static layout of the mitigated run.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema {

enum class MemoryPolicy { kNone, kStatic, kOffload, kTiling, kCaching, kXema };

inline constexpr int64_t kAlwaysOnVaeTiles = 4;
inline constexpr int64_t kAlwaysOnAttentionChunks = 16;

// {"none", "static", "offload", "tiling", "caching", "xema"}
std::vector<std::string> MemoryPolicyNames();
std::string MemoryPolicyName(MemoryPolicy policy);
// InvalidArgument "policy: got 'x', must be one of none, static, ...".
core::StatusOr<MemoryPolicy> ParseMemoryPolicy(const std::string& text);

// True for the policies that run from a static arena (static, xema).
bool UsesStaticArena(MemoryPolicy policy);
// True for the policies whose devices hold a host tier (offload, caching, xema): offload
// parks tensors in it always, caching and xema when the planner chooses to.
bool UsesHostTier(MemoryPolicy policy);
// True for the policies whose mitigations come from the planner (caching, xema).
bool UsesPlannedMitigations(MemoryPolicy policy);

// The request as an always-on policy runs it (offload, tiling); unchanged for the others.
// Tiles are capped at the latent grid (height / spatial_factor and width / spatial_factor).
DiffusionRequest AlwaysOnMitigations(MemoryPolicy policy, const TinyModelSpec& spec,
                                     const DiffusionRequest& request);

// The request with the strongest mitigations `policy` may apply (for the planned policies:
// every frame its own slice, kAlwaysOnVaeTiles tiles, every offload but idle weights under a
// static arena, whose weights stay resident beside it): what the server checks
// MinimumPeakBytes of before queueing a request.
DiffusionRequest StrongestMitigations(MemoryPolicy policy, const TinyModelSpec& spec,
                                      const DiffusionRequest& request);

}  // namespace tessera::xema
