// The tensor-parallel operators of a Megatron layer with sequence parallelism (Compass, part
// 2): a GEMM next to a collective over the token axis, on t ranks. Row-major fp32.
//
//   kind (models/tp_layer_ops.h)  per rank inputs            output
//   kAllGatherGemm       X_r (M/t, K), W_r (K, N)    Y_r = AG(X) W_r (M, N)
//                        layer ops: qkv/fc1 fprop, proj/fc2 dgrad
//   kGemmReduceScatter   X_r (M, K), W_r (K, N)      Y_r = rows r of sum_j X_j W_j (M/t, N)
//                        layer ops: proj/fc2 fprop, qkv/fc1 dgrad
//   kAllGatherWgrad      X_r (M/t, K), dY_r (M, N)   dW_r = AG(X)^T dY_r (K, N)
//                        layer ops: *_wgrad
// M is the tokens of all ranks (the AllGather's output rows, the ReduceScatter's input rows);
// K and N are the per-rank GEMM dimensions. Rank r's rows of the token axis are
// [r M/t, (r+1) M/t).
//
// Layer shapes (hidden h, FFN f, TP t): qkv K = h, N = 3h/t; fc1 K = h, N = f/t (AG); proj
// K = h/t, N = h; fc2 K = f/t, N = h (RS); wgrad of qkv: K = h, N = 3h/t. The whole layer's
// table is models/tp_layer_ops.h; the kind is that layer's type (models must not depend on
// Compass, so Compass names it here).
//
// Seeded inputs and the single-process reference of an operator: engine/tp_op_reference.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/tp_layer_ops.h"

namespace tessera::compass {

using TpOpKind = models::TpOpKind;

const char* TpOpKindName(TpOpKind kind);  // "ag-gemm", "gemm-rs", "wgrad"
core::StatusOr<TpOpKind> ParseTpOpKind(const std::string& name);

struct TpOpShape {
  TpOpKind kind = TpOpKind::kAllGatherGemm;
  int64_t m = 0;  // tokens of all ranks
  int64_t n = 0;  // per-rank GEMM output columns
  int64_t k = 0;  // per-rank GEMM reduction dimension (kAllGatherWgrad: the gathered X's columns)
  int tp = 1;
  std::string label;  // e.g. "qkv h1024 M2048"; informational

  int64_t shard_rows() const { return m / tp; }
  // GEMM FLOPs of one rank: 2 M N K.
  double flops() const { return 2.0 * static_cast<double>(m) * n * k; }
  // Wire bytes each rank sends in the collective at 2 bytes per element: (t-1) blocks.
  double collective_wire_bytes() const;
  // Elements of each tensor on one rank.
  int64_t x_count() const { return (kind == TpOpKind::kGemmReduceScatter ? m : m / tp) * k; }
  int64_t w_count() const { return kind == TpOpKind::kAllGatherWgrad ? m * n : k * n; }  // W or dY
  int64_t y_count() const;
};

// InvalidArgument naming the field: sizes in [1, 2^20] (M, N, K), tp in [1, 64], M divisible
// by tp, and one rank's tensors below 2^28 elements each.
core::Status ValidateTpOp(const TpOpShape& s);

// The dimension a degree-d decomposition splits and its length: kAllGatherGemm and kAllGatherWgrad
// split each rank's token shard (M/t rows), kGemmReduceScatter the output columns N.
int64_t DecompositionLength(const TpOpShape& s);
// InvalidArgument "decomp:D: d must divide <what> = L" when d does not divide it (or d < 1).
core::Status ValidateDegree(const TpOpShape& s, int d);

}  // namespace tessera::compass
