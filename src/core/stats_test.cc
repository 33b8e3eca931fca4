#include "core/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"

namespace tessera::core {
namespace {

TEST(StatsTest, MeanMedianHandWorked) {
  const std::vector<double> odd{5, 1, 3}, even{4, 1, 3, 2}, one{7};
  EXPECT_DOUBLE_EQ(Mean(odd), 3.0);
  EXPECT_DOUBLE_EQ(Median(odd), 3.0);
  EXPECT_DOUBLE_EQ(Median(even), 2.5);  // mean of the two middle samples
  EXPECT_DOUBLE_EQ(Median(one), 7.0);
  EXPECT_DOUBLE_EQ(Mean(std::vector<double>{}), 0.0);  // no samples
  EXPECT_DOUBLE_EQ(Median(std::vector<double>{}), 0.0);
  // Sample standard deviation of {5, 1, 3}: sqrt((4 + 4 + 0) / 2) = 2.
  EXPECT_DOUBLE_EQ(StdDev(odd), 2.0);
  EXPECT_DOUBLE_EQ(StdDev(one), 0.0);
}

TEST(StatsTest, PercentileInterpolatesLinearlyBetweenOrderStatistics) {
  const std::vector<double> v{10, 40, 20, 30};  // sorted 10 20 30 40, ranks 0..3
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 10);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 40);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 25);           // rank 1.5
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 37);           // rank 2.7: 0.3 * 30 + 0.7 * 40
  EXPECT_DOUBLE_EQ(Percentile(v, 100.0 / 3.0), 20);  // rank 1 exactly
  EXPECT_DOUBLE_EQ(Percentile(std::vector<double>{3}, 99), 3);
  EXPECT_DEATH(Percentile(v, 101), "must be in \\[0, 100\\]");
}

// Differential: Median against the textbook definition on seeded random samples, and the
// percentile is monotone in p and bounded by min and max.
TEST(StatsTest, MatchesPlainReferenceOnRandomSamples) {
  Rng rng(2024);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng.NextU64() % 40);
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(1e3 * (rng.Uniform() - 0.3));
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    const double ref = n % 2 == 1 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    EXPECT_EQ(Median(v), ref) << "trial " << trial;
    double sum = 0;
    for (double x : v) sum += x;
    EXPECT_NEAR(Mean(v), sum / n, 1e-9);
    double prev = Percentile(v, 0);
    EXPECT_EQ(prev, s.front());
    for (double p = 5; p <= 100; p += 5) {
      const double q = Percentile(v, p);
      EXPECT_GE(q, prev);
      EXPECT_LE(q, s.back());
      prev = q;
    }
  }
}

TEST(StatsTest, PredictionErrorHandWorked) {
  // |110-100| = 10 (10%), |45-50| = 5 (10%), |200-200| = 0, |30-40| = 10 (25%).
  const std::vector<double> p{110, 45, 200, 30}, m{100, 50, 200, 40};
  auto e = ComparePredictions(p, m);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->count, 4);
  EXPECT_DOUBLE_EQ(e->mae, 25.0 / 4);
  EXPECT_DOUBLE_EQ(e->mape_percent, 45.0 / 4);
  EXPECT_DOUBLE_EQ(e->max_ape_percent, 25.0);
  EXPECT_DOUBLE_EQ(*MeanAbsoluteError(p, m), 25.0 / 4);
  EXPECT_DOUBLE_EQ(*MeanAbsolutePercentError(p, m), 45.0 / 4);
  EXPECT_DOUBLE_EQ(*MaxAbsolutePercentError(p, m), 25.0);
}

// The bootstrap interval of the MAPE: resampling two cases with errors 0% and 10% gives mean
// errors 0, 5 and 10% with probabilities 1/4, 1/2, 1/4, so the 5th and 95th percentiles are
// 0% and 10%; equal errors or a single case give the MAPE itself; the interval holds the MAPE
// and is the same for the same inputs.
TEST(StatsTest, PredictionErrorBootstrapInterval) {
  auto two = ComparePredictions({100, 110}, {100, 100});
  ASSERT_TRUE(two.ok());
  EXPECT_DOUBLE_EQ(two->mape_percent, 5.0);
  EXPECT_DOUBLE_EQ(two->mape_p5_percent, 0.0);
  EXPECT_DOUBLE_EQ(two->mape_p95_percent, 10.0);
  auto same = ComparePredictions({110, 55, 220}, {100, 50, 200});
  ASSERT_TRUE(same.ok());
  EXPECT_NEAR(same->mape_p5_percent, 10.0, 1e-9);
  EXPECT_NEAR(same->mape_p95_percent, 10.0, 1e-9);
  auto one = ComparePredictions({90}, {100});
  ASSERT_TRUE(one.ok());
  EXPECT_DOUBLE_EQ(one->mape_p5_percent, 10.0);
  EXPECT_DOUBLE_EQ(one->mape_p95_percent, 10.0);
  Rng rng(3);
  std::vector<double> p(21), m(21);
  for (int i = 0; i < 21; ++i) {
    m[i] = rng.Uniform(1, 2);
    p[i] = m[i] * rng.Uniform(0.9, 1.1);
  }
  auto a = ComparePredictions(p, m), b = ComparePredictions(p, m);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(a->mape_p5_percent, a->mape_percent);
  EXPECT_GT(a->mape_p95_percent, a->mape_percent);
  EXPECT_LT(a->mape_p95_percent, a->max_ape_percent);
  EXPECT_EQ(a->mape_p5_percent, b->mape_p5_percent);
  EXPECT_EQ(a->mape_p95_percent, b->mape_p95_percent);
}

TEST(StatsTest, PredictionErrorRejectsBadInput) {
  EXPECT_EQ(ComparePredictions({1, 2}, {1}).status().message(),
            "ComparePredictions: got 2 predictions and 1 measurements, must be the same number "
            ">= 1");
  EXPECT_FALSE(ComparePredictions({}, {}).ok());
  EXPECT_EQ(ComparePredictions({1}, {0}).status().message(),
            "ComparePredictions: measurement 0 is 0.000000 (prediction 1.000000), measurements "
            "must be > 0 and predictions finite");
  EXPECT_FALSE(ComparePredictions({NAN}, {1}).ok());
  EXPECT_EQ(MeanAbsoluteError({1}, {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(StatsTest, WeightedPercentileHandWorked) {
  const std::vector<double> v = {3, 1, 2, 10};
  const std::vector<double> w = {1, 1, 1, 0};  // 10 carries no weight
  EXPECT_EQ(WeightedPercentile(v, w, 0), 1);
  EXPECT_EQ(WeightedPercentile(v, w, 33), 1);
  EXPECT_EQ(WeightedPercentile(v, w, 34), 2);
  EXPECT_EQ(WeightedPercentile(v, w, 100), 3);
  // Weight 98 on 5 and 1 each on 1 and 100: p99 is 5, p99.5 is 100.
  const std::vector<double> v2 = {5, 1, 100}, w2 = {98, 1, 1};
  EXPECT_EQ(WeightedPercentile(v2, w2, 50), 5);
  EXPECT_EQ(WeightedPercentile(v2, w2, 99), 5);
  EXPECT_EQ(WeightedPercentile(v2, w2, 99.5), 100);
  EXPECT_EQ(WeightedPercentile(std::vector<double>{}, std::vector<double>{}, 50), 0);
}

TEST(StatsTest, WeightedPercentileMatchesRepeatedSamples) {
  // Integer weights are the same as repeating each value: nearest rank on the expanded sample.
  Rng rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<double> v, w, expanded;
    for (int i = 0; i < 15; ++i) {
      v.push_back(static_cast<double>(rng.Below(41)));
      w.push_back(static_cast<double>(rng.Below(6)));
      for (int k = 0; k < static_cast<int>(w.back()); ++k) expanded.push_back(v.back());
    }
    std::sort(expanded.begin(), expanded.end());
    for (double p : {1.0, 25.0, 50.0, 90.0, 99.0, 100.0}) {
      if (expanded.empty()) continue;
      const size_t rank = static_cast<size_t>(std::ceil(p / 100 * expanded.size()));
      EXPECT_EQ(WeightedPercentile(v, w, p), expanded[std::max<size_t>(rank, 1) - 1])
          << "round " << round << " p " << p;
    }
  }
}

}  // namespace
}  // namespace tessera::core
