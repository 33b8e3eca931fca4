// The shape half of tp_op.h (names, validation, decomposition lengths): model code, in the
// tessera_compass library so planners use it without the runtime; tp_op.cc has the inputs and
// the single-process reference.
#include <string>

#include "compass/tp_op.h"

namespace tessera::compass {

namespace {

constexpr int64_t kMaxOpDim = int64_t{1} << 20;
constexpr int64_t kMaxOpTensor = int64_t{1} << 28;

}  // namespace

const char* TpOpKindName(TpOpKind kind) {
  switch (kind) {
    case TpOpKind::kAllGatherGemm:
      return "ag-gemm";
    case TpOpKind::kGemmReduceScatter:
      return "gemm-rs";
    case TpOpKind::kAllGatherWgrad:
      return "wgrad";
  }
  return "?";
}

core::StatusOr<TpOpKind> ParseTpOpKind(const std::string& name) {
  for (TpOpKind k :
       {TpOpKind::kAllGatherGemm, TpOpKind::kGemmReduceScatter, TpOpKind::kAllGatherWgrad}) {
    if (name == TpOpKindName(k)) return k;
  }
  return core::InvalidArgument("got '" + name + "', must be one of ag-gemm, gemm-rs, wgrad");
}

double TpOpShape::collective_wire_bytes() const {
  const double block = kind == TpOpKind::kGemmReduceScatter ? static_cast<double>(m / tp) * n
                                                            : static_cast<double>(m / tp) * k;
  return 2.0 * block * (tp - 1);
}

int64_t TpOpShape::y_count() const {
  switch (kind) {
    case TpOpKind::kAllGatherGemm:
      return m * n;
    case TpOpKind::kGemmReduceScatter:
      return m / tp * n;
    case TpOpKind::kAllGatherWgrad:
      return k * n;
  }
  return 0;
}

core::Status ValidateTpOp(const TpOpShape& s) {
  auto dim = [](const char* what, int64_t v) -> core::Status {
    if (v < 1 || v > kMaxOpDim) {
      return core::InvalidArgument(std::string(what) + ": got " + std::to_string(v) +
                                   ", must be in [1, " + std::to_string(kMaxOpDim) + "]");
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
    if (c > kMaxOpTensor) {
      return core::InvalidArgument("shape m " + std::to_string(s.m) + " n " + std::to_string(s.n) +
                                   " k " + std::to_string(s.k) + ": a tensor of " +
                                   std::to_string(c) + " elements, at most 2^28 per rank");
    }
  }
  return core::Status::Ok();
}

int64_t DecompositionLength(const TpOpShape& s) {
  return s.kind == TpOpKind::kGemmReduceScatter ? s.n : s.m / s.tp;
}

core::Status ValidateDegree(const TpOpShape& s, int d) {
  const int64_t len = DecompositionLength(s);
  const char* what = s.kind == TpOpKind::kGemmReduceScatter ? "n" : "m/tp";
  if (d < 1 || d > len || len % d != 0) {
    return core::InvalidArgument("decomp:" + std::to_string(d) + ": d must divide " + what + " = " +
                                 std::to_string(len));
  }
  return core::Status::Ok();
}

}  // namespace tessera::compass
