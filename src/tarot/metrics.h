// Referring-segmentation metrics (LISA's definitions, used by RefCOCO and ReasonSeg papers):
//   per-sample IoU  |P ∩ G| / |P ∪ G|, with the empty cases fixed here:
//                     P and G both empty      -> 1 (nothing to find, nothing found),
//                     P non-empty, G empty    -> 0 (every predicted pixel is wrong),
//                     P empty, G non-empty    -> 0 (nothing of the target found);
//   gIoU            the mean of per-sample IoU (a.k.a. mIoU);
//   cIoU            sum_s |P_s ∩ G_s| / sum_s |P_s ∪ G_s| (a.k.a. oIoU; large objects weigh
//                   more); 1 when every union is empty (every sample is "both empty");
//   P@t             the fraction of samples with IoU >= t, for t = 0.5, 0.7, 0.9;
//   95% intervals   percentile bootstrap: `resamples` draws of n samples with replacement
//                   (core::Rng(seed), so the same inputs and seed give the same bits), each
//                   figure recomputed per draw, the 2.5th and 97.5th percentiles (linear
//                   interpolation, core::Percentile) of the draws. One sample: lo = hi = value.
// Per-tier aggregation groups samples by their `tier` string (E0, E1, ..., I2) in name order,
// plus "all".
// Stateless free functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/types.h"

namespace tessera::tarot {

// The counts one sample contributes; `iou` follows the empty-case rules above.
struct SampleScore {
  std::string tier;
  int64_t intersection = 0;  // |P ∩ G|, pixels
  int64_t union_count = 0;   // |P ∪ G|, pixels
  double iou = 0;
};

// IoU of a prediction against a target of the same size (sizes CHECKed), empty cases as above.
double SampleIou(const Mask& prediction, const Mask& target);
SampleScore ScoreSample(const Mask& prediction, const Mask& target, std::string tier = "");

struct Interval {
  double lo = 0, hi = 0;
};

struct MetricsOptions {
  int bootstrap_resamples = 1000;  // 0: no intervals (lo = hi = the point estimate)
  uint64_t seed = 1;
};

struct MetricSummary {
  int samples = 0;
  double giou = 0, ciou = 0;
  double p50 = 0, p70 = 0, p90 = 0;  // fractions in [0, 1]
  Interval giou_ci, ciou_ci, p50_ci, p70_ci, p90_ci;
};

// InvalidArgument for no samples or resamples < 0 ("metrics: got 0 samples, need >= 1").
core::StatusOr<MetricSummary> Summarize(const std::vector<SampleScore>& samples,
                                        const MetricsOptions& options = {});
// Summaries per tier (map key = tier) and of all samples (key "all"); each tier's bootstrap
// uses its own stream (Rng(seed).Fork(i) for the i-th key in name order).
core::StatusOr<std::map<std::string, MetricSummary>> SummarizeByTier(
    const std::vector<SampleScore>& samples, const MetricsOptions& options = {});

}  // namespace tessera::tarot
