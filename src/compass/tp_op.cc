#include "compass/tp_op.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/rng.h"
#include "kernels/gemm.h"

namespace tessera::compass {

namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxTensor = int64_t{1} << 28;

void Fill(std::vector<float>* v, int64_t count, uint64_t seed) {
  core::Rng rng(seed);
  v->resize(static_cast<size_t>(count));
  for (float& x : *v) x = static_cast<float>(rng.Uniform(-1.0, 1.0));
}

}  // namespace

const char* TpOpKindName(TpOpKind kind) {
  switch (kind) {
    case TpOpKind::kAgGemm:
      return "ag-gemm";
    case TpOpKind::kGemmRs:
      return "gemm-rs";
    case TpOpKind::kWgrad:
      return "wgrad";
  }
  return "?";
}

core::StatusOr<TpOpKind> ParseTpOpKind(const std::string& name) {
  for (TpOpKind k : {TpOpKind::kAgGemm, TpOpKind::kGemmRs, TpOpKind::kWgrad}) {
    if (name == TpOpKindName(k)) return k;
  }
  return core::InvalidArgument("got '" + name + "', must be one of ag-gemm, gemm-rs, wgrad");
}

double TpOpShape::collective_wire_bytes() const {
  const double block =
      kind == TpOpKind::kGemmRs ? static_cast<double>(m / tp) * n : static_cast<double>(m / tp) * k;
  return 2.0 * block * (tp - 1);
}

int64_t TpOpShape::y_count() const {
  switch (kind) {
    case TpOpKind::kAgGemm:
      return m * n;
    case TpOpKind::kGemmRs:
      return m / tp * n;
    case TpOpKind::kWgrad:
      return k * n;
  }
  return 0;
}

core::Status ValidateTpOp(const TpOpShape& s) {
  auto dim = [](const char* what, int64_t v) -> core::Status {
    if (v < 1 || v > kMaxDim) {
      return core::InvalidArgument(std::string(what) + ": got " + std::to_string(v) +
                                   ", must be in [1, " + std::to_string(kMaxDim) + "]");
    }
    return core::Status::Ok();
  };
  if (s.tp < 1 || s.tp > 64) {
    return core::InvalidArgument("tp: got " + std::to_string(s.tp) + ", must be in [1, 64]");
  }
  RETURN_IF_ERROR(dim("m", s.m));
  RETURN_IF_ERROR(dim("n", s.n));
  RETURN_IF_ERROR(dim("k", s.k));
  if (s.m % s.tp != 0) {
    return core::InvalidArgument("m: got " + std::to_string(s.m) + ", not divisible by tp " +
                                 std::to_string(s.tp) + " (the token axis is sharded)");
  }
  for (int64_t c : {s.x_count(), s.w_count(), s.y_count(), s.m * s.k}) {
    if (c > kMaxTensor) {
      return core::InvalidArgument("shape m " + std::to_string(s.m) + " n " + std::to_string(s.n) +
                                   " k " + std::to_string(s.k) + ": a tensor of " +
                                   std::to_string(c) + " elements, at most 2^28 per rank");
    }
  }
  return core::Status::Ok();
}

int64_t DecompositionLength(const TpOpShape& s) {
  return s.kind == TpOpKind::kGemmRs ? s.n : s.m / s.tp;
}

core::Status ValidateDegree(const TpOpShape& s, int d) {
  const int64_t len = DecompositionLength(s);
  const char* what = s.kind == TpOpKind::kGemmRs ? "n" : "m/tp";
  if (d < 1 || d > len || len % d != 0) {
    return core::InvalidArgument("decomp:" + std::to_string(d) + ": d must divide " + what + " = " +
                                 std::to_string(len));
  }
  return core::Status::Ok();
}

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
  if (s.kind == TpOpKind::kGemmRs) {
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
  if (s.kind == TpOpKind::kAgGemm) {
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
