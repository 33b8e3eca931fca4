#include "xema/serve/memory_policy.h"

namespace tessera::xema {

std::vector<std::string> MemoryPolicyNames() { return {"none", "static"}; }

std::string MemoryPolicyName(MemoryPolicy policy) {
  return policy == MemoryPolicy::kNone ? "none" : "static";
}

core::StatusOr<MemoryPolicy> ParseMemoryPolicy(const std::string& text) {
  if (text == "none") return MemoryPolicy::kNone;
  if (text == "static") return MemoryPolicy::kStatic;
  const std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
  return core::InvalidArgument("policy: got '" + shown + "', must be none or static");
}

}  // namespace tessera::xema
