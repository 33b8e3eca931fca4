#include "xema/serve/memory_policy.h"

#include <algorithm>

namespace tessera::xema {
namespace {

struct PolicyNameEntry {
  MemoryPolicy policy;
  const char* name;
};
constexpr PolicyNameEntry kPolicies[] = {
    {MemoryPolicy::kNone, "none"},       {MemoryPolicy::kStatic, "static"},
    {MemoryPolicy::kOffload, "offload"}, {MemoryPolicy::kTiling, "tiling"},
    {MemoryPolicy::kCaching, "caching"}, {MemoryPolicy::kXema, "xema"}};

}  // namespace

std::vector<std::string> MemoryPolicyNames() {
  std::vector<std::string> names;
  for (const PolicyNameEntry& p : kPolicies) names.push_back(p.name);
  return names;
}

std::string MemoryPolicyName(MemoryPolicy policy) {
  for (const PolicyNameEntry& p : kPolicies) {
    if (p.policy == policy) return p.name;
  }
  return "unknown";
}

core::StatusOr<MemoryPolicy> ParseMemoryPolicy(const std::string& text) {
  for (const PolicyNameEntry& p : kPolicies) {
    if (text == p.name) return p.policy;
  }
  const std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
  std::string names;
  for (const PolicyNameEntry& p : kPolicies)
    names += std::string(names.empty() ? "" : ", ") + p.name;
  return core::InvalidArgument("policy: got '" + shown + "', must be one of " + names);
}

bool UsesStaticArena(MemoryPolicy policy) {
  return policy == MemoryPolicy::kStatic || policy == MemoryPolicy::kXema;
}

bool UsesHostTier(MemoryPolicy policy) {
  return policy == MemoryPolicy::kOffload || UsesPlannedMitigations(policy);
}

bool UsesPlannedMitigations(MemoryPolicy policy) {
  return policy == MemoryPolicy::kCaching || policy == MemoryPolicy::kXema;
}

DiffusionRequest AlwaysOnMitigations(MemoryPolicy policy, const TinyModelSpec& spec,
                                     const DiffusionRequest& request) {
  DiffusionRequest r = request;
  if (policy == MemoryPolicy::kOffload) {
    r.offload.text_context = r.offload.latent = r.offload.image = r.offload.idle_weights = true;
  } else if (policy == MemoryPolicy::kTiling) {
    r.vae_frame_slices = r.frames;
    const int64_t grid = std::min(r.height, r.width) / spec.spatial_factor;
    r.vae_tiles = std::max<int64_t>(1, std::min(kAlwaysOnVaeTiles, grid));
    if (r.attention == models::AttentionMode::kChunked) {
      r.attention_chunks = std::max(r.attention_chunks, kAlwaysOnAttentionChunks);
    }
  }
  return r;
}

DiffusionRequest StrongestMitigations(MemoryPolicy policy, const TinyModelSpec& spec,
                                      const DiffusionRequest& request) {
  if (!UsesPlannedMitigations(policy)) return AlwaysOnMitigations(policy, spec, request);
  DiffusionRequest r = AlwaysOnMitigations(
      MemoryPolicy::kOffload, spec, AlwaysOnMitigations(MemoryPolicy::kTiling, spec, request));
  // A static arena runs beside the device's resident weights: they are never parked.
  if (UsesStaticArena(policy)) r.offload.idle_weights = false;
  return r;
}

}  // namespace tessera::xema
