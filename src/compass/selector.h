// The strategy selector (Compass part 3): for one TP operator, the candidate of lowest
// predicted time (strategy_model.h) among none, fused-ring1, fused-ring2, fused-direct and
// decomp:D (every degree the inputs carry, up to max_degree and kMaxStrategyDegree); when the
// best beats `none` by less than the margin, `none` (never regress on a prediction's error).
// Each pick says why: its predicted time against none's, the communication it leaves exposed,
// the degree for a decomposition, and the contention factor it was predicted with.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compass/strategy_model.h"
#include "compass/strategy_name.h"
#include "core/status.h"

namespace tessera::compass {

struct SelectorOptions {
  double margin = 0.03;  // the best must be predicted this much faster than none
  int max_degree = 16;
};

struct StrategyPick {
  StrategyName strategy;  // none, fused-ring2, decomp:4, ...
  double predicted_s = 0;
  double none_s = 0;  // none's predicted time
  // Every candidate's prediction, fastest first.
  std::vector<std::pair<StrategyName, double>> candidates;
  std::string reason;
};

// InvalidArgument when the inputs lack what `none` needs (the GEMM, the ring1 collective).
core::StatusOr<StrategyPick> SelectStrategy(const StrategyInputs& in, const OverheadTable& table,
                                            const SelectorOptions& options = {});

}  // namespace tessera::compass
