// `mpi`: the communicator's own AllGather / ReduceScatter (MPI, or the in-process fake),
// unpaced, then (or after) the GEMM. A correctness reference: its time does not move bytes
// at the topology's speeds and is not compared.
#include <span>

#include "compass/strategies.h"

namespace tessera::compass::internal {

namespace {

class MpiReference final : public OverlapStrategy {
 public:
  core::Status Run(OverlapContext& ctx, const TpOpShape& s, int, const OpBuffers& io) override {
    const int64_t rows = s.shard_rows();
    if (s.kind == TpOpKind::kGemmRs) {
      float* partial = ctx.Scratch(0, s.m * s.n);
      RETURN_IF_ERROR(PartialRows(ctx, s, io.x, io.w, partial, 0, s.m));
      return ctx.world().ReduceScatter(
          std::span<const float>(partial, static_cast<size_t>(s.m * s.n)),
          std::span<float>(io.y, static_cast<size_t>(rows * s.n)));
    }
    float* gathered = ctx.Scratch(0, s.m * s.k);
    RETURN_IF_ERROR(
        ctx.world().AllGather(std::span<const float>(io.x, static_cast<size_t>(rows * s.k)),
                              std::span<float>(gathered, static_cast<size_t>(s.m * s.k))));
    if (s.kind == TpOpKind::kAgGemm) return AgGemmRows(ctx, s, gathered, io.w, io.y, 0, s.m);
    return WgradRows(ctx, s, gathered, io.w, io.y, 0, s.m, false);
  }
};

}  // namespace

std::unique_ptr<OverlapStrategy> NewMpiReference() { return std::make_unique<MpiReference>(); }

}  // namespace tessera::compass::internal
