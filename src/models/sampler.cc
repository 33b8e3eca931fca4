#include "models/sampler.h"

#include <cmath>
#include <vector>

#include "core/check.h"

namespace tessera::models {

int32_t Greedy(std::span<const float> logits) {
  CHECK(!logits.empty()) << "Greedy: no logits";
  int64_t best = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) continue;
    if (best < 0 || logits[i] > logits[best]) best = static_cast<int64_t>(i);
  }
  return static_cast<int32_t>(best < 0 ? 0 : best);
}

int32_t SampleTemperature(std::span<const float> logits, double temperature, core::Rng& rng) {
  CHECK(std::isfinite(temperature) && temperature >= 0.0)
      << "SampleTemperature: temperature " << temperature;
  if (temperature == 0.0) return Greedy(logits);
  const int32_t top = Greedy(logits);
  const double max = logits[top];
  if (!std::isfinite(max)) return top;  // +inf, or every logit -inf / NaN
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double x = logits[i];
    p[i] = std::isnan(x) ? 0.0 : std::exp((x - max) / temperature);
    sum += p[i];
  }
  const double u = rng.Uniform() * sum;
  double acc = 0.0;
  int64_t last_positive = top;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0.0) continue;
    acc += p[i];
    last_positive = static_cast<int64_t>(i);
    if (u < acc) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last_positive);  // rounding left u at the very top
}

}  // namespace tessera::models
