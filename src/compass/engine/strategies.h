// The factories of the registered overlap strategies (one file each: strategy_*.cc) and the
// helpers they share. Internal to compass/; users go through overlap_strategy.h.
#pragma once

#include <functional>
#include <memory>

#include "compass/engine/overlap_strategy.h"

namespace tessera::compass::internal {

using comm::ConstBuffer;
using comm::DType;
using comm::LinkAlgo;
using comm::MutableBuffer;

std::unique_ptr<OverlapStrategy> NewNoOverlap();     // strategy_none.cc
std::unique_ptr<OverlapStrategy> NewFusedRing1();    // strategy_fused.cc
std::unique_ptr<OverlapStrategy> NewFusedRing2();    // strategy_fused.cc
std::unique_ptr<OverlapStrategy> NewFusedDirect();   // strategy_fused.cc
std::unique_ptr<OverlapStrategy> NewDecomposed();    // strategy_decomp.cc
std::unique_ptr<OverlapStrategy> NewTeDefaults();    // strategy_te.cc
std::unique_ptr<OverlapStrategy> NewMpiReference();  // strategy_mpi.cc

// The bulk form shared by `none` and `mpi`: `gather` (x -> the (M, K) gathered X) or
// `reduce_scatter` (the (M, N) partial -> y), before or after one GEMM over all rows.
using BulkGather = std::function<core::Status(const float* x, float* gathered)>;
using BulkReduceScatter = std::function<core::Status(const float* partial, float* y)>;
core::Status RunBulk(OverlapContext& ctx, const TpOpShape& s, const OpBuffers& io,
                     const BulkGather& gather, const BulkReduceScatter& reduce_scatter);

// Shared GEMM steps (row-major, per tp_op.h's layouts). `gathered` is the (M, K) AllGather
// output; rows [r0, r1) of the token axis.
// kAllGatherGemm: y[r0:r1] = gathered[r0:r1] W.
core::Status AgGemmRows(OverlapContext& ctx, const TpOpShape& s, const float* gathered,
                        const float* w, float* y, int64_t r0, int64_t r1);
// kAllGatherWgrad: dW (+)= gathered[r0:r1]^T dY[r0:r1].
core::Status WgradRows(OverlapContext& ctx, const TpOpShape& s, const float* gathered,
                       const float* dy, float* dw, int64_t r0, int64_t r1, bool accumulate);
// kGemmReduceScatter: partial[r0:r1] = X[r0:r1] W (the rank's contribution to those rows).
core::Status PartialRows(OverlapContext& ctx, const TpOpShape& s, const float* x, const float* w,
                         float* partial, int64_t r0, int64_t r1);

}  // namespace tessera::compass::internal
