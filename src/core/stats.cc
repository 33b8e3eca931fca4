#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/check.h"
#include "core/rng.h"

namespace tessera::core {

double Mean(std::span<const double> values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double StdDev(std::span<const double> values) {
  if (values.size() < 2) return 0;
  const double mean = Mean(values);
  double ss = 0;
  for (double v : values) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / static_cast<double>(values.size() - 1));
}

MinMedianMax SummarizeMinMedianMax(std::span<const double> values) {
  MinMedianMax s;
  s.count = static_cast<int>(values.size());
  if (values.empty()) return s;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  s.median = Median(values);
  return s;
}

double Percentile(std::span<const double> values, double p) {
  CHECK(p >= 0 && p <= 100) << "Percentile: p = " << p << ", must be in [0, 100]";
  if (values.empty()) return 0;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  if (lo + 1 >= v.size()) return v.back();
  const double f = rank - static_cast<double>(lo);
  if (f == 0) return v[lo];
  return (1 - f) * v[lo] + f * v[lo + 1];
}

double WeightedPercentile(std::span<const double> values, std::span<const double> weights,
                          double p) {
  CHECK(p >= 0 && p <= 100) << "WeightedPercentile: p = " << p << ", must be in [0, 100]";
  CHECK(values.size() == weights.size())
      << "WeightedPercentile: " << values.size() << " values but " << weights.size() << " weights";
  std::vector<size_t> order;
  double total = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    CHECK(weights[i] >= 0) << "WeightedPercentile: weight " << weights[i];
    if (weights[i] > 0) order.push_back(i);
    total += weights[i];
  }
  if (total <= 0) return 0;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return values[a] != values[b] ? values[a] < values[b] : a < b;
  });
  const double target = p / 100 * total;
  double sum = 0;
  for (size_t i : order) {
    sum += weights[i];
    if (sum >= target) return values[i];
  }
  return values[order.back()];
}

double Median(std::span<const double> values) { return Percentile(values, 50); }

StatusOr<PredictionError> ComparePredictions(const std::vector<double>& predicted,
                                             const std::vector<double>& measured) {
  if (predicted.size() != measured.size() || measured.empty()) {
    return InvalidArgument("ComparePredictions: got " + std::to_string(predicted.size()) +
                           " predictions and " + std::to_string(measured.size()) +
                           " measurements, must be the same number >= 1");
  }
  PredictionError e;
  e.count = static_cast<int>(measured.size());
  std::vector<double> apes(measured.size());
  for (size_t i = 0; i < measured.size(); ++i) {
    if (!(measured[i] > 0) || !std::isfinite(predicted[i])) {
      return InvalidArgument("ComparePredictions: measurement " + std::to_string(i) + " is " +
                             std::to_string(measured[i]) + " (prediction " +
                             std::to_string(predicted[i]) +
                             "), measurements must be > 0 and predictions finite");
    }
    const double abs_err = std::fabs(predicted[i] - measured[i]);
    const double ape = 100.0 * abs_err / measured[i];
    apes[i] = ape;
    e.mae += abs_err;
    e.mape_percent += ape;
    e.max_ape_percent = std::max(e.max_ape_percent, ape);
  }
  e.mae /= e.count;
  e.mape_percent /= e.count;
  // Bootstrap over the cases: the MAPE of kMapeBootstrapResamples draws with replacement.
  Rng rng(0x6d617065);  // fixed: the interval is a function of the inputs
  std::vector<double> mapes(kMapeBootstrapResamples);
  const uint64_t n = apes.size();
  for (double& m : mapes) {
    double sum = 0;
    for (uint64_t k = 0; k < n; ++k) sum += apes[rng.Below(n)];
    m = sum / static_cast<double>(n);
  }
  e.mape_p5_percent = n > 1 ? Percentile(mapes, 5) : e.mape_percent;
  e.mape_p95_percent = n > 1 ? Percentile(mapes, 95) : e.mape_percent;
  return e;
}

StatusOr<double> MeanAbsoluteError(const std::vector<double>& predicted,
                                   const std::vector<double>& measured) {
  ASSIGN_OR_RETURN(PredictionError e, ComparePredictions(predicted, measured));
  return e.mae;
}

StatusOr<double> MeanAbsolutePercentError(const std::vector<double>& predicted,
                                          const std::vector<double>& measured) {
  ASSIGN_OR_RETURN(PredictionError e, ComparePredictions(predicted, measured));
  return e.mape_percent;
}

StatusOr<double> MaxAbsolutePercentError(const std::vector<double>& predicted,
                                         const std::vector<double>& measured) {
  ASSIGN_OR_RETURN(PredictionError e, ComparePredictions(predicted, measured));
  return e.max_ape_percent;
}

}  // namespace tessera::core
