#include "tarot/metrics.h"

#include <array>
#include <utility>

#include "core/rng.h"
#include "core/stats.h"

namespace tessera::tarot {

double SampleIou(const Mask& prediction, const Mask& target) {
  const int64_t u = prediction.UnionCount(target);
  if (u == 0) return 1.0;  // both empty
  return static_cast<double>(prediction.IntersectionCount(target)) / static_cast<double>(u);
}

SampleScore ScoreSample(const Mask& prediction, const Mask& target, std::string tier) {
  SampleScore s;
  s.tier = std::move(tier);
  s.intersection = prediction.IntersectionCount(target);
  s.union_count = prediction.UnionCount(target);
  s.iou = s.union_count == 0
              ? 1.0
              : static_cast<double>(s.intersection) / static_cast<double>(s.union_count);
  return s;
}

namespace {

constexpr std::array<double, 3> kThresholds = {0.5, 0.7, 0.9};

// The five point figures (gIoU, cIoU, P@0.5, P@0.7, P@0.9) of the samples at `index`.
std::array<double, 5> Figures(const std::vector<SampleScore>& samples,
                              const std::vector<size_t>& index) {
  double iou_sum = 0;
  int64_t inter = 0, uni = 0;
  std::array<int64_t, 3> hits = {0, 0, 0};
  for (size_t i : index) {
    const SampleScore& s = samples[i];
    iou_sum += s.iou;
    inter += s.intersection;
    uni += s.union_count;
    for (size_t t = 0; t < kThresholds.size(); ++t) hits[t] += s.iou >= kThresholds[t] ? 1 : 0;
  }
  const double n = static_cast<double>(index.size());
  return {iou_sum / n, uni == 0 ? 1.0 : static_cast<double>(inter) / static_cast<double>(uni),
          static_cast<double>(hits[0]) / n, static_cast<double>(hits[1]) / n,
          static_cast<double>(hits[2]) / n};
}

MetricSummary SummarizeChecked(const std::vector<SampleScore>& samples,
                               const std::vector<size_t>& index, const MetricsOptions& options,
                               core::Rng rng) {
  MetricSummary out;
  out.samples = static_cast<int>(index.size());
  const std::array<double, 5> point = Figures(samples, index);
  out.giou = point[0];
  out.ciou = point[1];
  out.p50 = point[2];
  out.p70 = point[3];
  out.p90 = point[4];
  std::array<Interval*, 5> cis = {&out.giou_ci, &out.ciou_ci, &out.p50_ci, &out.p70_ci,
                                  &out.p90_ci};
  if (options.bootstrap_resamples == 0 || index.size() == 1) {
    for (size_t k = 0; k < cis.size(); ++k) *cis[k] = Interval{point[k], point[k]};
    return out;
  }
  std::array<std::vector<double>, 5> draws;
  std::vector<size_t> pick(index.size());
  for (int r = 0; r < options.bootstrap_resamples; ++r) {
    for (size_t& p : pick) p = index[rng.Below(index.size())];
    const std::array<double, 5> f = Figures(samples, pick);
    for (size_t k = 0; k < draws.size(); ++k) draws[k].push_back(f[k]);
  }
  for (size_t k = 0; k < cis.size(); ++k) {
    *cis[k] = Interval{core::Percentile(draws[k], 2.5), core::Percentile(draws[k], 97.5)};
  }
  return out;
}

core::Status ValidateMetricInputs(size_t n, const MetricsOptions& options) {
  if (n == 0) return core::InvalidArgument("metrics: got 0 samples, need >= 1");
  if (options.bootstrap_resamples < 0) {
    return core::InvalidArgument("metrics.bootstrap_resamples: got " +
                                 std::to_string(options.bootstrap_resamples) +
                                 ", must be >= 0 (0: no intervals; e.g. 1000)");
  }
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<MetricSummary> Summarize(const std::vector<SampleScore>& samples,
                                        const MetricsOptions& options) {
  RETURN_IF_ERROR(ValidateMetricInputs(samples.size(), options));
  std::vector<size_t> all(samples.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return SummarizeChecked(samples, all, options, core::Rng(options.seed));
}

core::StatusOr<std::map<std::string, MetricSummary>> SummarizeByTier(
    const std::vector<SampleScore>& samples, const MetricsOptions& options) {
  RETURN_IF_ERROR(ValidateMetricInputs(samples.size(), options));
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < samples.size(); ++i) {
    groups[samples[i].tier].push_back(i);
    groups["all"].push_back(i);
  }
  std::map<std::string, MetricSummary> out;
  const core::Rng base(options.seed);
  uint64_t stream = 0;
  for (const auto& [tier, index] : groups) {
    out[tier] = SummarizeChecked(samples, index, options, base.Fork(stream++));
  }
  return out;
}

}  // namespace tessera::tarot
