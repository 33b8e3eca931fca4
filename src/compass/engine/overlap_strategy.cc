#include "compass/engine/overlap_strategy.h"

#include "compass/engine/strategies.h"
#include "core/parse_number.h"

namespace tessera::compass {

const StrategyRegistryTable& StrategyRegistry() {
  static const StrategyRegistryTable* table = [] {
    auto* r = new StrategyRegistryTable("strategy");
    r->Add({{},
            "none",
            "collective (single ring), then GEMM (Megatron-LM)",
            &internal::NewNoOverlap,
            {}});
    r->Add({{},
            "fused-ring1",
            "GEMM per block inside a single-ring collective (Flux)",
            &internal::NewFusedRing1,
            {}});
    r->Add({{},
            "fused-ring2",
            "GEMM per half block inside the double ring (Compass)",
            &internal::NewFusedRing2,
            {}});
    r->Add({{},
            "fused-direct",
            "GEMM per block inside direct pulls (PyTorch async TP)",
            &internal::NewFusedDirect,
            {}});
    r->Add({{.takes_degree = true},
            "decomp",
            "D parts, collective i overlaps GEMM i+1",
            &internal::NewDecomposed,
            {}});
    r->Add({{},
            "te",
            "Transformer Engine defaults: ring exchange AG, pipeline D=4 RS",
            &internal::NewTeDefaults,
            {}});
    r->Add({{.timed = false},
            "mpi",
            "the communicator's unpaced collective, then GEMM",
            &internal::NewMpiReference,
            {}});
    return r;
  }();
  return *table;
}

core::StatusOr<StrategyChoice> ParseStrategy(const std::string& name) {
  const size_t colon = name.find(':');
  const std::string base = name.substr(0, colon);
  const StrategyEntry* e = StrategyRegistry().FindOrNull(base);
  if (e == nullptr) {
    std::string names;
    for (const StrategyEntry& x : StrategyRegistry()) {
      names += (names.empty() ? "" : ", ") + x.name + (x.takes_degree ? ":D" : "");
    }
    return core::InvalidArgument("strategy: got '" + name + "', must be one of " + names);
  }
  StrategyChoice c;
  c.entry = e;
  c.name = name;
  if (!e->takes_degree) {
    if (colon != std::string::npos) {
      return core::InvalidArgument("strategy: got '" + name + "', " + base + " takes no degree");
    }
    return c;
  }
  if (colon == std::string::npos) {
    return core::InvalidArgument("strategy: got '" + name + "', must be " + base +
                                 ":D with D the number of parts");
  }
  auto d = core::ParseInteger(name.substr(colon + 1), 1, 64);
  if (!d.ok()) {
    return core::InvalidArgument("strategy: got '" + name + "': the degree " +
                                 d.status().message());
  }
  c.degree = static_cast<int>(*d);
  return c;
}

core::Status RunStrategy(OverlapContext& ctx, const StrategyChoice& choice, const TpOpShape& shape,
                         const OpBuffers& io) {
  RETURN_IF_ERROR(ValidateTpOp(shape));
  if (shape.tp != ctx.world().size()) {
    return core::InvalidArgument("tp " + std::to_string(shape.tp) + " on " +
                                 std::to_string(ctx.world().size()) + " ranks");
  }
  if (choice.entry->takes_degree) RETURN_IF_ERROR(ValidateDegree(shape, choice.degree));
  std::unique_ptr<OverlapStrategy> s = choice.entry->make();
  return s->Run(ctx, shape, choice.degree, io);
}

namespace internal {

core::Status AgGemmRows(OverlapContext& ctx, const TpOpShape& s, const float* gathered,
                        const float* w, float* y, int64_t r0, int64_t r1) {
  if (r1 <= r0) return core::Status::Ok();
  return ctx.Gemm(false, r1 - r0, s.n, s.k, gathered + r0 * s.k, s.k, w, s.n, false, y + r0 * s.n,
                  s.n);
}

core::Status WgradRows(OverlapContext& ctx, const TpOpShape& s, const float* gathered,
                       const float* dy, float* dw, int64_t r0, int64_t r1, bool accumulate) {
  if (r1 <= r0) return core::Status::Ok();
  return ctx.Gemm(true, s.k, s.n, r1 - r0, gathered + r0 * s.k, s.k, dy + r0 * s.n, s.n, accumulate,
                  dw, s.n);
}

core::Status PartialRows(OverlapContext& ctx, const TpOpShape& s, const float* x, const float* w,
                         float* partial, int64_t r0, int64_t r1) {
  if (r1 <= r0) return core::Status::Ok();
  return ctx.Gemm(false, r1 - r0, s.n, s.k, x + r0 * s.k, s.k, w, s.n, false, partial + r0 * s.n,
                  s.n);
}

}  // namespace internal

}  // namespace tessera::compass
