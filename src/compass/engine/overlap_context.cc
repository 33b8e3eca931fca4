#include "compass/engine/overlap_context.h"

#include <algorithm>

#include "core/check.h"

namespace tessera::compass {

float* OverlapContext::Scratch(int slot, int64_t count) {
  CHECK(slot >= 0 && slot < 8);
  std::vector<float>& v = scratch_[slot];
  if (static_cast<int64_t>(v.size()) < count) v.resize(static_cast<size_t>(count));
  return v.data();
}

}  // namespace tessera::compass
