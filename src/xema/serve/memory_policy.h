// How a serving device manages its memory budget (Xema part 2; the planner-driven policies
// come later):
//   none    PyTorch's default: a caching allocator (CachingDeviceAllocator, policy "pytorch")
//           whose device limit is the budget; a request that runs out of memory fails (507).
//   static  one static layout per request template (model, size, frames, steps, cfg): the
//           first request of a template is recorded (RecordRequest), a tflite layout planned,
//           and every later request of the template runs from an arena of exactly that size.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::xema {

enum class MemoryPolicy { kNone, kStatic };

std::vector<std::string> MemoryPolicyNames();  // {"none", "static"}
std::string MemoryPolicyName(MemoryPolicy policy);
// InvalidArgument "policy: got 'x', must be none or static".
core::StatusOr<MemoryPolicy> ParseMemoryPolicy(const std::string& text);

}  // namespace tessera::xema
