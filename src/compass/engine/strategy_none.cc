// `none`: the collective on the single ring, then the GEMM (Megatron-LM without overlap).
#include "compass/engine/strategies.h"

namespace tessera::compass::internal {

namespace {

class NoOverlap final : public OverlapStrategy {
 public:
  core::Status Run(OverlapContext& ctx, const TpOpShape& s, int, const OpBuffers& io) override {
    const int64_t rows = s.shard_rows();
    return RunBulk(
        ctx, s, io,
        [&](const float* x, float* gathered) {
          return ctx.ring1().AllGather(ConstBuffer{x, rows * s.k, DType::kF32},
                                       MutableBuffer{gathered, s.m * s.k, DType::kF32},
                                       LinkAlgo::kRing1);
        },
        [&](const float* partial, float* y) {
          return ctx.ring1().ReduceScatter(ConstBuffer{partial, s.m * s.n, DType::kF32},
                                           MutableBuffer{y, rows * s.n, DType::kF32},
                                           LinkAlgo::kRing1);
        });
  }
};

}  // namespace

core::Status RunBulk(OverlapContext& ctx, const TpOpShape& s, const OpBuffers& io,
                     const BulkGather& gather, const BulkReduceScatter& reduce_scatter) {
  if (s.kind == TpOpKind::kGemmReduceScatter) {
    float* partial = ctx.Scratch(0, s.m * s.n);
    RETURN_IF_ERROR(PartialRows(ctx, s, io.x, io.w, partial, 0, s.m));
    return reduce_scatter(partial, io.y);
  }
  float* gathered = ctx.Scratch(0, s.m * s.k);
  RETURN_IF_ERROR(gather(io.x, gathered));
  if (s.kind == TpOpKind::kAllGatherGemm) return AgGemmRows(ctx, s, gathered, io.w, io.y, 0, s.m);
  return WgradRows(ctx, s, gathered, io.w, io.y, 0, s.m, false);
}

std::unique_ptr<OverlapStrategy> NewNoOverlap() { return std::make_unique<NoOverlap>(); }

}  // namespace tessera::compass::internal
