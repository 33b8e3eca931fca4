// `fused-ring1`, `fused-ring2`, `fused-direct`: the GEMM runs inside the collective, block
// part by block part as they arrive (AllGather, wgrad) or just before they are sent
// (ReduceScatter), through comm::BlockHooks, while the copy engine moves the next step.
#include "compass/engine/strategies.h"

namespace tessera::compass::internal {

namespace {

class Fused final : public OverlapStrategy {
 public:
  explicit Fused(LinkAlgo algo) : algo_(algo) {}

  core::Status Run(OverlapContext& ctx, const TpOpShape& s, int, const OpBuffers& io) override {
    comm::LinkCollectives& lc = algo_ == LinkAlgo::kRing2 ? ctx.ring2() : ctx.ring1();
    const int64_t rows = s.shard_rows();
    comm::BlockHooks hooks;
    if (s.kind == TpOpKind::kGemmReduceScatter) {
      float* partial = ctx.Scratch(0, s.m * s.n);
      hooks.granule = s.n;
      hooks.produce = [&](int block, int64_t lo, int64_t hi) {
        return PartialRows(ctx, s, io.x, io.w, partial, block * rows + lo / s.n,
                           block * rows + hi / s.n);
      };
      return lc.ReduceScatter(ConstBuffer{partial, s.m * s.n, DType::kF32},
                              MutableBuffer{io.y, rows * s.n, DType::kF32}, algo_, &hooks);
    }
    float* gathered = ctx.Scratch(0, s.m * s.k);
    bool first = true;
    hooks.granule = s.k;
    hooks.ready = [&](int block, int64_t lo, int64_t hi) -> core::Status {
      const int64_t r0 = block * rows + lo / s.k, r1 = block * rows + hi / s.k;
      if (s.kind == TpOpKind::kAllGatherGemm)
        return AgGemmRows(ctx, s, gathered, io.w, io.y, r0, r1);
      const bool accumulate = !first;
      first = false;
      return WgradRows(ctx, s, gathered, io.w, io.y, r0, r1, accumulate);
    };
    return lc.AllGather(ConstBuffer{io.x, rows * s.k, DType::kF32},
                        MutableBuffer{gathered, s.m * s.k, DType::kF32}, algo_, &hooks);
  }

 private:
  LinkAlgo algo_;
};

}  // namespace

std::unique_ptr<OverlapStrategy> NewFusedRing1() {
  return std::make_unique<Fused>(LinkAlgo::kRing1);
}
std::unique_ptr<OverlapStrategy> NewFusedRing2() {
  return std::make_unique<Fused>(LinkAlgo::kRing2);
}
std::unique_ptr<OverlapStrategy> NewFusedDirect() {
  return std::make_unique<Fused>(LinkAlgo::kDirect);
}

}  // namespace tessera::compass::internal
