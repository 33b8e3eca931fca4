// Stage 2 of the Zellige planner: greedy filler packing (zellige.md, Components 2c).
// Fillers always run whole. Stage 1 gave each rank a filler budget B_r (its fluid work);
// with F = sum of filler prices / N, fillers in descending price p_s (ties: batch order)
// go to
//   argmax_r min((B_r - placed_r - p_s) / F, (cap - mem_r - M_s) / cap)
// among ranks whose memory headroom holds M_s (ties: lowest rank). Returns the rank of
// each filler, or Infeasible ("planning failed: ...") when one fits no rank.
// Pure function; thread-safe.
#pragma once

#include <vector>

#include "core/status.h"

namespace tessera::zellige {

struct FillerItem {
  int seq = 0;
  double time_s = 0;
  double mem_bytes = 0;
};

// `budget_s` is B_r; `mem_bytes` (per rank, anchors so far) is updated in place.
core::StatusOr<std::vector<int>> PackFillers(const std::vector<FillerItem>& fillers,
                                             const std::vector<double>& budget_s,
                                             std::vector<double>& mem_bytes, double mem_cap_bytes);

}  // namespace tessera::zellige
