#include "core/tensor_error.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace tessera::core {

void TensorError::Add(double got, double ref) {
  const double diff = std::fabs(got - ref);
  max_diff_ = std::isfinite(diff) ? std::max(max_diff_, diff) : INFINITY;
  if (std::isfinite(ref)) max_ref_ = std::max(max_ref_, std::fabs(ref));
}

void TensorError::Add(std::span<const float> got, std::span<const float> ref) {
  CHECK(got.size() == ref.size());
  for (size_t i = 0; i < got.size(); ++i) Add(got[i], ref[i]);
}

ErrorStats TensorError::Stats() const {
  return {max_diff_, max_diff_ / std::max(max_ref_, kTinyReference)};
}

ErrorStats CompareTensors(std::span<const float> got, std::span<const float> ref) {
  TensorError e;
  e.Add(got, ref);
  return e.Stats();
}

ErrorStats WorstOf(const ErrorStats& a, const ErrorStats& b) {
  auto worst = [](double x, double y) {
    if (std::isnan(x) || std::isnan(y)) return static_cast<double>(INFINITY);
    return std::max(x, y);
  };
  return {worst(a.max_abs, b.max_abs), worst(a.max_rel, b.max_rel)};
}

}  // namespace tessera::core
