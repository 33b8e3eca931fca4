// Prediction error of a cost model against measurements: mean absolute error (in the
// quantities' unit) and mean absolute percentage error, as reported by
// `tessera zellige validate` (and the paper: MAPE 3.4% step time, 1.5% peak memory).
//   MAE  = mean_i |p_i - m_i|,  MAPE = 100 * mean_i |p_i - m_i| / m_i.
// Stateless; thread-safe.
#pragma once

#include <vector>

#include "core/status.h"

namespace tessera::zellige {

struct PredictionError {
  int count = 0;
  double mae = 0;
  double mape_percent = 0;
  double max_ape_percent = 0;  // worst single |p - m| / m, percent
};

// InvalidArgument when the sizes differ, are empty, or a measurement is not > 0.
core::StatusOr<PredictionError> ComparePredictions(const std::vector<double>& predicted,
                                                   const std::vector<double>& measured);

}  // namespace tessera::zellige
