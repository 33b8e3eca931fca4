// Measured training steps of one plan: per rank, the phase times of every timed step and the
// heap bytes (zellige::engine::MeasurePlan produces them; the profile builder and the
// validation report consume them, so they are plain data of the zellige layer).
// Times in seconds, bytes absolute (base_bytes included in peak_bytes). Plain values.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::zellige {

struct RankMeasurement {
  int64_t local_tokens = 0;
  std::vector<double> forward_s;  // per timed step
  std::vector<double> backward_s;
  std::vector<double> tail_s;
  std::vector<double> step_s;  // forward + backward + tail
  int64_t base_bytes = 0;      // allocated before the first step
  int64_t peak_bytes = 0;      // max over timed steps of the step's peak allocated bytes
};

struct PlanMeasurement {
  bool memory_measured = false;
  std::vector<RankMeasurement> ranks;  // indexed by world rank
  int steps() const { return ranks.empty() ? 0 : static_cast<int>(ranks[0].step_s.size()); }
  // Median over timed steps of the slowest rank's step time.
  double MedianMakespanS() const;
  // Largest peak_bytes over ranks.
  int64_t MaxPeakBytes() const;
};

}  // namespace tessera::zellige
