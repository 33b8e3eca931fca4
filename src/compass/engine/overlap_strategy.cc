#include "compass/engine/overlap_strategy.h"

#include "compass/engine/strategies.h"
#include "core/check.h"

namespace tessera::compass {

namespace {

using Family = StrategyFamily;

}  // namespace

const StrategyRegistryTable& StrategyRegistry() {
  static const StrategyRegistryTable* table = [] {
    auto* r = new StrategyRegistryTable("strategy");
    auto add = [r](StrategyTraits traits, const char* description,
                   std::unique_ptr<OverlapStrategy> (*make)()) {
      r->Add({traits, StrategyFamilyName(traits.family), description, make, {}});
    };
    add({.family = Family::kNone}, "collective (single ring), then GEMM (Megatron-LM)",
        &internal::NewNoOverlap);
    add({.family = Family::kFusedRing1}, "GEMM per block inside a single-ring collective (Flux)",
        &internal::NewFusedRing1);
    add({.family = Family::kFusedRing2}, "GEMM per half block inside the double ring (Compass)",
        &internal::NewFusedRing2);
    add({.family = Family::kFusedDirect}, "GEMM per block inside direct pulls (PyTorch async TP)",
        &internal::NewFusedDirect);
    add({.family = Family::kDecomp}, "D parts, collective i overlaps GEMM i+1",
        &internal::NewDecomposed);
    add({.family = Family::kTe}, "Transformer Engine defaults: ring exchange AG, pipeline D=4 RS",
        &internal::NewTeDefaults);
    add({.family = Family::kMpi, .timed = false},
        "the communicator's unpaced collective, then GEMM", &internal::NewMpiReference);
    // The table is code: one entry per family, in the families' order.
    size_t i = 0;
    for (const StrategyEntry& e : *r) {
      CHECK(i < AllStrategyFamilies().size() && e.family == AllStrategyFamilies()[i])
          << "strategy registry: entry " << e.name << " out of order";
      ++i;
    }
    CHECK(i == AllStrategyFamilies().size()) << "strategy registry: a family has no entry";
    return r;
  }();
  return *table;
}

StrategyChoice ChoiceOf(const StrategyName& id) {
  const StrategyEntry* e = StrategyRegistry().FindOrNull(StrategyFamilyName(id.family));
  CHECK(e != nullptr) << "strategy registry: no entry for " << id.Name();
  return StrategyChoice{e, id};
}

core::StatusOr<StrategyChoice> ParseStrategy(const std::string& name) {
  ASSIGN_OR_RETURN(StrategyName id, StrategyName::Parse(name));
  return ChoiceOf(id);
}

core::Status RunStrategy(OverlapContext& ctx, const StrategyChoice& choice, const TpOpShape& shape,
                         const OpBuffers& io) {
  RETURN_IF_ERROR(ValidateTpOp(shape));
  if (shape.tp != ctx.world().size()) {
    return core::InvalidArgument("tp " + std::to_string(shape.tp) + " on " +
                                 std::to_string(ctx.world().size()) + " ranks");
  }
  if (TakesDegree(choice.id.family)) RETURN_IF_ERROR(ValidateDegree(shape, choice.degree()));
  std::unique_ptr<OverlapStrategy> s = choice.entry->make();
  return s->Run(ctx, shape, choice.degree(), io);
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
