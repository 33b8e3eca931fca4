// `mpi`: the communicator's own AllGather / ReduceScatter (MPI, or the in-process fake),
// unpaced, then (or after) the GEMM. A correctness reference: its time does not move bytes
// at the topology's speeds and is not compared.
#include <span>

#include "compass/engine/strategies.h"

namespace tessera::compass::internal {

namespace {

class MpiReference final : public OverlapStrategy {
 public:
  core::Status Run(OverlapContext& ctx, const TpOpShape& s, int, const OpBuffers& io) override {
    const auto rows = static_cast<size_t>(s.shard_rows());
    const auto m = static_cast<size_t>(s.m), n = static_cast<size_t>(s.n),
               k = static_cast<size_t>(s.k);
    return RunBulk(
        ctx, s, io,
        [&](const float* x, float* gathered) {
          return ctx.world().AllGather(std::span<const float>(x, rows * k),
                                       std::span<float>(gathered, m * k));
        },
        [&](const float* partial, float* y) {
          return ctx.world().ReduceScatter(std::span<const float>(partial, m * n),
                                           std::span<float>(y, rows * n));
        });
  }
};

}  // namespace

std::unique_ptr<OverlapStrategy> NewMpiReference() { return std::make_unique<MpiReference>(); }

}  // namespace tessera::compass::internal
