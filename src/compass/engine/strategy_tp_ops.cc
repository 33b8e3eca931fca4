#include "compass/engine/strategy_tp_ops.h"

#include "comm/futex.h"

namespace tessera::compass {

StrategyTpOps::StrategyTpOps(OverlapContext& ctx, std::map<std::string, StrategyChoice> per_op,
                             StrategyChoice fallback)
    : ctx_(ctx), per_op_(std::move(per_op)), fallback_(std::move(fallback)) {}

TpOpShape TpOpShapeOf(const std::string& name, TpOpKind kind, const models::TpGemmDims& d, int tp) {
  TpOpShape s;
  s.kind = kind;
  s.m = d.m;
  s.n = d.n;
  s.k = d.k;
  s.tp = tp;
  s.label = name;
  return s;
}

const StrategyChoice& StrategyTpOps::ChoiceFor(const std::string& name) const {
  auto it = per_op_.find(name);
  return it == per_op_.end() ? fallback_ : it->second;
}

core::Status StrategyTpOps::Run(const std::string& name, TpOpKind kind, const models::TpGemmDims& d,
                                const float* x, const float* w, float* y) {
  const TpOpShape s = TpOpShapeOf(name, kind, d, tp());
  const int64_t t0 = comm::NowNs();
  core::Status st = RunStrategy(ctx_, ChoiceFor(name), s, OpBuffers{x, w, y});
  const int64_t t1 = comm::NowNs();
  op_s_[name] += static_cast<double>(t1 - t0) * 1e-9;
  if (recording_) spans_.push_back({name, t0, t1});
  if (!st.ok()) return core::Status(st.code(), "operator " + name + ": " + st.message());
  return core::Status::Ok();
}

core::Status StrategyTpOps::AllGatherGemm(const std::string& name, const models::TpGemmDims& d,
                                          const float* x, const float* w, float* y) {
  return Run(name, TpOpKind::kAllGatherGemm, d, x, w, y);
}

core::Status StrategyTpOps::GemmReduceScatter(const std::string& name, const models::TpGemmDims& d,
                                              const float* x, const float* w, float* y) {
  return Run(name, TpOpKind::kGemmReduceScatter, d, x, w, y);
}

core::Status StrategyTpOps::AllGatherWgrad(const std::string& name, const models::TpGemmDims& d,
                                           const float* x, const float* dy, float* dw) {
  return Run(name, TpOpKind::kAllGatherWgrad, d, x, dy, dw);
}

core::Status StrategyTpOps::AllReduceSum(std::span<float> data) {
  return ctx_.world().AllReduceSum(data);
}

core::Status StrategyTpOps::AllReduceSum(std::span<double> data) {
  return ctx_.world().AllReduceSum(data);
}

}  // namespace tessera::compass
