#include "tarot/msr_ablations.h"

#include <algorithm>

namespace tessera::tarot {

PatchGrid FlatGrid(const PatchGrid& grid) {
  PatchGrid out = grid;
  if (out.dim < 1) return out;
  std::fill(out.features.begin(), out.features.end(), 0.0f);
  for (size_t i = 0; i < out.features.size(); i += static_cast<size_t>(out.dim)) {
    out.features[i] = 1.0f;
  }
  return out;
}

}  // namespace tessera::tarot
