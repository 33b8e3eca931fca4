// Test-only helpers for the models tests: seeded random vectors, central finite differences
// of a scalar probe sum(w * f(x)), a scale-relative error and a tiny SmallGpt config. Not part of
// tessera_models.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "models/small_gpt_config.h"

namespace tessera::models::testing {

// A SmallGpt small enough for finite differences: V 16, h 8, 2 heads, 2 layers, f 16, 8 positions.
inline SmallGptConfig TinyGptConfig() {
  SmallGptConfig c;
  c.vocab = 16;
  c.hidden = 8;
  c.num_heads = 2;
  c.num_layers = 2;
  c.ffn_hidden = 16;
  c.max_seq = 8;
  c.init_seed = 5;
  return c;
}

inline std::vector<float> RandomNormal(core::Rng& rng, int64_t n, double stddev = 1.0) {
  std::vector<float> out(n);
  for (float& x : out) x = static_cast<float>(stddev * rng.Normal());
  return out;
}

// sum_i w_i * y_i accumulated in double.
inline double Probe(const std::vector<float>& w, const std::vector<float>& y) {
  double s = 0.0;
  for (size_t i = 0; i < w.size() && i < y.size(); ++i) s += static_cast<double>(w[i]) * y[i];
  return s;
}

// d/dx_i of Probe(w, f(x)) by central differences with step eps, for every i.
template <typename F>
std::vector<double> NumericalGrad(F f, std::vector<float> x, const std::vector<float>& w,
                                  float eps) {
  std::vector<double> grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = saved + eps;
    const double plus = Probe(w, f(x));
    x[i] = saved - eps;
    const double minus = Probe(w, f(x));
    x[i] = saved;
    grad[i] = (plus - minus) / (2.0 * static_cast<double>(eps));
  }
  return grad;
}

// max_i |a_i - b_i| / max_i |b_i| (infinite if sizes differ).
template <typename A, typename B>
double MaxRelErr(const std::vector<A>& a, const std::vector<B>& b) {
  if (a.size() != b.size()) return INFINITY;
  double max_diff = 0.0, max_ref = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    max_ref = std::max(max_ref, std::abs(static_cast<double>(b[i])));
  }
  return max_ref == 0.0 ? max_diff : max_diff / max_ref;
}

}  // namespace tessera::models::testing
