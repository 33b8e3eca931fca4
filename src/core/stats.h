// Descriptive statistics over samples (timings, sizes) and the prediction error of a model
// against measurements.
//
// Mean, Median and Percentile take any number of samples; for an empty input they return 0
// ("no samples", the convention of the timing code that reports medians). NaN samples are a
// caller error (the result is unspecified). Percentile uses linear interpolation between
// order statistics (NumPy's default "linear" method, Hyndman & Fan type 7): with the samples
// sorted as v[0] <= ... <= v[n-1], the p-th percentile (p in [0, 100]) is at rank
// r = p / 100 * (n - 1) and equals (1 - f) v[floor r] + f v[floor r + 1] with f = r - floor r.
// Median is Percentile(50): the middle sample, or the mean of the two middle ones.
//
// Prediction error (used by `tessera zellige validate`):
//   MAE  = mean_i |p_i - m_i|   (in the quantities' unit),
//   MAPE = 100 * mean_i |p_i - m_i| / m_i,   max APE = 100 * max_i |p_i - m_i| / m_i.
// Stateless; thread-safe.
#pragma once

#include <span>
#include <vector>

#include "core/status.h"

namespace tessera::core {

double Mean(std::span<const double> values);
double Median(std::span<const double> values);
// Sample standard deviation (n - 1 in the denominator); 0 for fewer than 2 values.
double StdDev(std::span<const double> values);

// Count, minimum, median and maximum of a sample (all 0 when empty).
struct MinMedianMax {
  int count = 0;
  double min = 0, median = 0, max = 0;
};
MinMedianMax SummarizeMinMedianMax(std::span<const double> values);
// p in [0, 100] (CHECKed).
double Percentile(std::span<const double> values, double p);
// The weighted nearest-rank percentile: the smallest value v such that the samples <= v carry
// at least p / 100 of the total weight (p = 0: the smallest value with weight > 0). Weights are
// >= 0 and parallel to the values (CHECKed); 0 when the total weight is 0.
double WeightedPercentile(std::span<const double> values, std::span<const double> weights,
                          double p);

struct PredictionError {
  int count = 0;
  double mae = 0;
  double mape_percent = 0;
  double max_ape_percent = 0;  // worst single |p - m| / m, percent
  // How much the MAPE moves with the cases drawn: the 5th and 95th percentiles of the MAPE
  // over kMapeBootstrapResamples resamples of the cases with replacement (a fixed seed, so
  // the same inputs give the same interval); both equal mape_percent with one case. The
  // resampling costs O(kMapeBootstrapResamples x count).
  double mape_p5_percent = 0;
  double mape_p95_percent = 0;
};
inline constexpr int kMapeBootstrapResamples = 2000;

// InvalidArgument when the sizes differ, are empty, a measurement is not > 0 or a prediction
// is not finite, e.g. "ComparePredictions: got 3 predictions and 2 measurements, must be the
// same number >= 1".
StatusOr<PredictionError> ComparePredictions(const std::vector<double>& predicted,
                                             const std::vector<double>& measured);

// The single figures of ComparePredictions (same checks and messages).
StatusOr<double> MeanAbsoluteError(const std::vector<double>& predicted,
                                   const std::vector<double>& measured);
StatusOr<double> MeanAbsolutePercentError(const std::vector<double>& predicted,
                                          const std::vector<double>& measured);
StatusOr<double> MaxAbsolutePercentError(const std::vector<double>& predicted,
                                         const std::vector<double>& measured);

}  // namespace tessera::core
