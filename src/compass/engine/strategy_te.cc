// `te`: Transformer Engine's userbuffer defaults (num_splits = tp with ring_exchange for the
// AllGather, a pipeline of 4 splits for the ReduceScatter, bulk wgrad): fused-ring1 for
// kAllGatherGemm (a ring exchange computes each arriving block), decomp:4 for kGemmReduceScatter
// (the largest degree <= 4 that divides N when 4 does not), none for kAllGatherWgrad.
#include "compass/engine/strategies.h"

namespace tessera::compass::internal {

namespace {

class TeDefaults final : public OverlapStrategy {
 public:
  core::Status Run(OverlapContext& ctx, const TpOpShape& s, int, const OpBuffers& io) override {
    switch (s.kind) {
      case TpOpKind::kAllGatherGemm:
        return NewFusedRing1()->Run(ctx, s, 0, io);
      case TpOpKind::kGemmReduceScatter: {
        int d = 4;
        while (d > 1 && s.n % d != 0) --d;
        return NewDecomposed()->Run(ctx, s, d, io);
      }
      case TpOpKind::kAllGatherWgrad:
        return NewNoOverlap()->Run(ctx, s, 0, io);
    }
    return core::Internal("te: unknown operator kind");
  }
};

}  // namespace

std::unique_ptr<OverlapStrategy> NewTeDefaults() { return std::make_unique<TeDefaults>(); }

}  // namespace tessera::compass::internal
