// Test-only helpers for the kernels tests: seeded random tensors, varlen offset arrays and
// error metrics. Not part of the tessera_kernels library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "kernels/gemm.h"

namespace tessera::kernels::testing {

// The GEMM backends compiled into this build.
inline std::vector<GemmBackend> AvailableBackends() {
  std::vector<GemmBackend> out;
  for (GemmBackend b : {GemmBackend::kOpenBlas, GemmBackend::kOneDnn}) {
    if (GemmBackendAvailable(b)) out.push_back(b);
  }
  return out;
}

// Selects a GEMM backend for a scope and restores the previous one on exit.
class ScopedGemmBackend {
 public:
  explicit ScopedGemmBackend(GemmBackend backend) : saved_(CurrentGemmBackend()) {
    CHECK(SetGemmBackend(backend).ok());
  }
  ~ScopedGemmBackend() { CHECK(SetGemmBackend(saved_).ok()); }
  ScopedGemmBackend(const ScopedGemmBackend&) = delete;
  ScopedGemmBackend& operator=(const ScopedGemmBackend&) = delete;

 private:
  GemmBackend saved_;
};

// n values drawn from Normal(0, stddev).
inline std::vector<float> RandomNormal(core::Rng& rng, int64_t n, double stddev = 1.0) {
  std::vector<float> out(n);
  for (float& x : out) x = static_cast<float>(stddev * rng.Normal());
  return out;
}

// Cumulative offsets {0, l0, l0 + l1, ...} from per-sequence lengths.
inline std::vector<int64_t> CumSum(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> cu(1, 0);
  for (int64_t l : lengths) cu.push_back(cu.back() + l);
  return cu;
}

// Splits each sequence's tokens of a packed (total, width) tensor at a per-sequence cut:
// tokens [cu[i], cu[i] + cuts[i]) go to *first, the rest of sequence i to *second. Writes the
// offset arrays of both parts to *cu_first and *cu_second.
inline void SplitTokens(const std::vector<int64_t>& cu, const std::vector<int64_t>& cuts,
                        int64_t width, const std::vector<float>& x, std::vector<float>* first,
                        std::vector<float>* second, std::vector<int64_t>* cu_first,
                        std::vector<int64_t>* cu_second) {
  first->clear();
  second->clear();
  *cu_first = {0};
  *cu_second = {0};
  for (size_t i = 0; i + 1 < cu.size(); ++i) {
    const int64_t mid = cu[i] + cuts[i];
    first->insert(first->end(), x.begin() + cu[i] * width, x.begin() + mid * width);
    second->insert(second->end(), x.begin() + mid * width, x.begin() + cu[i + 1] * width);
    cu_first->push_back(cu_first->back() + cuts[i]);
    cu_second->push_back(cu_second->back() + (cu[i + 1] - mid));
  }
}

// max_i |a_i - b_i| / max_i |b_i|: error relative to the reference's scale (robust where
// individual reference entries are near zero). 0 when both are all zeros.
template <typename A, typename B>
double MaxRelErr(const std::vector<A>& a, const std::vector<B>& b) {
  double max_diff = 0.0, max_ref = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    max_ref = std::max(max_ref, std::abs(static_cast<double>(b[i])));
  }
  if (a.size() != b.size()) return INFINITY;
  return max_ref == 0.0 ? max_diff : max_diff / max_ref;
}

// As MaxRelErr but skips entries where the reference is -inf and requires them to match.
inline double MaxRelErrLse(const std::vector<float>& a, const std::vector<float>& b) {
  double max_diff = 0.0, max_ref = 0.0;
  if (a.size() != b.size()) return INFINITY;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(b[i]) || std::isinf(a[i])) {
      if (a[i] != b[i]) return INFINITY;
      continue;
    }
    max_diff = std::max(max_diff, std::abs(static_cast<double>(a[i]) - b[i]));
    max_ref = std::max(max_ref, std::abs(static_cast<double>(b[i])));
  }
  return max_ref == 0.0 ? max_diff : max_diff / std::max(1.0, max_ref);
}

}  // namespace tessera::kernels::testing
