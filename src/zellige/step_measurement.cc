#include "zellige/step_measurement.h"

#include <algorithm>

#include "core/stats.h"

namespace tessera::zellige {

double PlanMeasurement::MedianMakespanS() const {
  std::vector<double> makespans;
  for (int s = 0; s < steps(); ++s) {
    double mx = 0;
    for (const RankMeasurement& r : ranks) mx = std::max(mx, r.step_s[s]);
    makespans.push_back(mx);
  }
  return core::Median(makespans);
}

int64_t PlanMeasurement::MaxPeakBytes() const {
  int64_t mx = 0;
  for (const RankMeasurement& r : ranks) mx = std::max(mx, r.peak_bytes);
  return mx;
}

}  // namespace tessera::zellige
