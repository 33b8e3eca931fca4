#include "zellige/prediction_error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tessera::zellige {

core::StatusOr<PredictionError> ComparePredictions(const std::vector<double>& predicted,
                                                   const std::vector<double>& measured) {
  if (predicted.size() != measured.size() || measured.empty()) {
    return core::InvalidArgument("ComparePredictions: got " + std::to_string(predicted.size()) +
                                 " predictions and " + std::to_string(measured.size()) +
                                 " measurements, must be the same number >= 1");
  }
  PredictionError e;
  e.count = static_cast<int>(measured.size());
  for (size_t i = 0; i < measured.size(); ++i) {
    if (!(measured[i] > 0) || !std::isfinite(predicted[i])) {
      return core::InvalidArgument("ComparePredictions: measurement " + std::to_string(i) + " is " +
                                   std::to_string(measured[i]) + " (prediction " +
                                   std::to_string(predicted[i]) +
                                   "), measurements must be > 0 and predictions finite");
    }
    const double abs_err = std::fabs(predicted[i] - measured[i]);
    const double ape = 100.0 * abs_err / measured[i];
    e.mae += abs_err;
    e.mape_percent += ape;
    e.max_ape_percent = std::max(e.max_ape_percent, ape);
  }
  e.mae /= e.count;
  e.mape_percent /= e.count;
  return e;
}

}  // namespace tessera::zellige
