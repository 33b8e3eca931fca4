// What a benchmark report (tarot/bench.h) says against the bars, and its JSON.
// Bars (gIoU in points = 100 x gIoU; the spec states them for the synthetic segmenter and the
// rule reasoner, and they are checked on whatever backends the report ran):
//   eri-gain-<tier>   E3, E4, I1, I2: gIoU(eri) - gIoU(naive) >= +10 points
//   eri-keep-<tier>   E0, E1:         gIoU(eri) - gIoU(naive) >= -2 points
//   msr-gain          on samples with boundary errors: gIoU(full) - gIoU(eri) >= +5 points
//   msr-harm          clean samples where MSR lowers IoU by more than 0.05: < 3%
//   reasoner-error    at 20% reasoner error: loss(full) <= 0.5 x loss(naive-coupling), the loss
//                     being gIoU(0%) - gIoU(20%); when naive coupling loses nothing (<= 0), met
//                     only if full loses nothing either
// Comparisons allow 1e-9 points of rounding (100 x (0.3 - 0.2) < 10 in doubles).
// A bar whose inputs the report lacks (a system not run, a tier without samples, no boundary
// split or sweep) is "not applicable" and neither met nor missed.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "tarot/bench.h"

namespace tessera::tarot {

struct TargetCheck {
  std::string name;   // "eri-gain-E3"
  std::string claim;  // "ERI beats naive SAM3 on E3"
  std::string bar;    // ">= +10 points"
  double value = 0;   // in the bar's unit (points, or a fraction)
  bool applicable = false;
  bool met = false;
  std::string note;  // why not applicable
};

inline constexpr double kEriGainPoints = 10, kEriKeepPoints = -2, kMsrGainPoints = 5;
inline constexpr double kMsrHarmFraction = 0.03, kReasonerLossRatio = 0.5;

std::vector<TargetCheck> CheckTargets(const BenchReport& report);

// The summary of one system in a report, or nullptr when it did not run.
const SystemSummary* FindSystem(const BenchReport& report, System s);

// {"kind": "tarot-bench", "measured_on": "this machine", options, "samples_per_tier", "systems":
// [{"system", "tiers": {tier: {"samples", "giou", "giou_ci": [lo, hi], "ciou", ..., "p90_ci"}},
// "calls_per_query": {...}, "ms_per_query": {"median", "mean"}, "setup_ms_median", "errors"}],
// "boundary", "sweep", "targets", "wall_s"}.
core::Json BenchReportToJson(const BenchReport& report);

// The data `tarot bench --plot` draws (scripts/plot_tarot_bench.py): {"title", "tiers": [...,
// "all"], "systems": [{"system", "giou": [points per tier, null where no sample]}], "sweep":
// {"skill", "rates": [%], "full": [points], "coupling": [points]} or null}.
core::Json BenchPlotJson(const BenchReport& report);

}  // namespace tessera::tarot
