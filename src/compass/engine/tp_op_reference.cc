#include "compass/engine/tp_op_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/rng.h"
#include "kernels/gemm.h"

namespace tessera::compass {

namespace {

void Fill(std::vector<float>* v, int64_t count, uint64_t seed) {
  core::Rng rng(seed);
  v->resize(static_cast<size_t>(count));
  for (float& x : *v) x = static_cast<float>(rng.Uniform(-1.0, 1.0));
}

}  // namespace

void TpOpInputs(const TpOpShape& s, uint64_t seed, int rank, std::vector<float>* x,
                std::vector<float>* w) {
  const uint64_t base = seed * 1000003ULL + static_cast<uint64_t>(rank) * 7919ULL;
  Fill(x, s.x_count(), base + 1);
  Fill(w, s.w_count(), base + 2);
}

core::StatusOr<std::vector<float>> TpOpReference(const TpOpShape& s, uint64_t seed, int rank) {
  RETURN_IF_ERROR(ValidateTpOp(s));
  const int t = s.tp;
  const int64_t rows = s.shard_rows();
  std::vector<float> x, w;
  std::vector<float> out(static_cast<size_t>(s.y_count()));
  using kernels::Transpose;
  if (s.kind == TpOpKind::kGemmReduceScatter) {
    // Rows of block `rank` of sum_j X_j W_j.
    std::vector<double> sum(out.size(), 0.0);
    std::vector<float> part(out.size());
    for (int j = 0; j < t; ++j) {
      TpOpInputs(s, seed, j, &x, &w);
      RETURN_IF_ERROR(kernels::Gemm(Transpose::kNo, Transpose::kNo, rows, s.n, s.k, 1.0f,
                                    x.data() + rank * rows * s.k, s.k, w.data(), s.n, 0.0f,
                                    part.data(), s.n));
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    }
    for (size_t i = 0; i < sum.size(); ++i) out[i] = static_cast<float>(sum[i]);
    return out;
  }
  // The gathered X (M, K): every rank's shard in rank order.
  std::vector<float> gathered(static_cast<size_t>(s.m * s.k));
  for (int j = 0; j < t; ++j) {
    TpOpInputs(s, seed, j, &x, &w);
    std::copy(x.begin(), x.end(), gathered.begin() + j * rows * s.k);
  }
  TpOpInputs(s, seed, rank, &x, &w);
  if (s.kind == TpOpKind::kAllGatherGemm) {
    RETURN_IF_ERROR(kernels::Gemm(Transpose::kNo, Transpose::kNo, s.m, s.n, s.k, 1.0f,
                                  gathered.data(), s.k, w.data(), s.n, 0.0f, out.data(), s.n));
  } else {
    RETURN_IF_ERROR(kernels::Gemm(Transpose::kYes, Transpose::kNo, s.k, s.n, s.m, 1.0f,
                                  gathered.data(), s.k, w.data(), s.n, 0.0f, out.data(), s.n));
  }
  return out;
}

core::StatusOr<double> RelativeError(const std::vector<float>& got,
                                     const std::vector<float>& want) {
  if (got.size() != want.size()) {
    return core::InvalidArgument("relative error: " + std::to_string(got.size()) +
                                 " elements against " + std::to_string(want.size()));
  }
  double diff = 0, scale = 0;
  bool nan = false;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    nan = nan || std::isnan(d);
    if (d > diff) diff = d;
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  if (nan) return std::numeric_limits<double>::infinity();
  if (scale == 0) return diff == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return diff / scale;
}

}  // namespace tessera::compass
