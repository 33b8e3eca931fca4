// Prediction error of a cost model against measurements, as reported by
// `tessera zellige validate` (and the paper: MAPE 3.4% step time, 1.5% peak memory).
// The arithmetic lives in core/stats.h (MAE, MAPE, max APE); these names stay for callers.
#pragma once

#include "core/stats.h"

namespace tessera::zellige {

using core::ComparePredictions;
using core::PredictionError;

}  // namespace tessera::zellige
