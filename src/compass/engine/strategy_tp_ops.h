// StrategyTpOps: the tensor-parallel operators a model calls (models/tp_ops.h) run by Compass's
// overlap strategies (overlap_strategy.h) on a rank's OverlapContext, with one strategy per
// operator name ("qkv", "fc2-dgrad", ...) or one for all. The model's AllReduceSum goes to the
// communicator directly (it is not a TP operator of the registry).
//
// Each call builds the operator's TpOpShape (kind, M, N, K, the context's world size) and runs
// the chosen strategy; a strategy that cannot run the shape (a decomposition degree that does
// not divide it) returns its InvalidArgument naming the operator. Wall seconds per operator
// name are kept (OpSeconds) for the run's report.
// Thread-safety: one thread at a time, like the context.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compass/engine/overlap_context.h"
#include "compass/engine/overlap_strategy.h"
#include "models/tp_ops.h"

namespace tessera::compass {

class StrategyTpOps final : public models::TensorParallelOps {
 public:
  // `per_op`: the strategy of each operator name; others run `fallback`.
  StrategyTpOps(OverlapContext& ctx, std::map<std::string, StrategyChoice> per_op,
                StrategyChoice fallback);

  int tp() const override { return ctx_.world().size(); }
  int rank() const override { return ctx_.world().rank(); }
  core::Status AllGatherGemm(const std::string& name, const models::TpGemmDims& d, const float* x,
                             const float* w, float* y) override;
  core::Status GemmReduceScatter(const std::string& name, const models::TpGemmDims& d,
                                 const float* x, const float* w, float* y) override;
  core::Status AllGatherWgrad(const std::string& name, const models::TpGemmDims& d, const float* x,
                              const float* dy, float* dw) override;
  core::Status AllReduceSum(std::span<float> data) override;
  core::Status AllReduceSum(std::span<double> data) override;

  // The strategy `name` runs.
  const StrategyChoice& ChoiceFor(const std::string& name) const;
  // Wall seconds spent in each operator since construction.
  const std::map<std::string, double>& OpSeconds() const { return op_s_; }

  // While recording, every call's name and its begin and end (comm::NowNs) are kept.
  struct Span {
    std::string name;
    int64_t begin_ns = 0, end_ns = 0;
  };
  void set_recording(bool on) { recording_ = on; }
  std::vector<Span> TakeSpans() { return std::exchange(spans_, {}); }

 private:
  core::Status Run(const std::string& name, TpOpKind kind, const models::TpGemmDims& d,
                   const float* x, const float* w, float* y);

  OverlapContext& ctx_;
  std::map<std::string, StrategyChoice> per_op_;
  StrategyChoice fallback_;
  std::map<std::string, double> op_s_;
  bool recording_ = false;
  std::vector<Span> spans_;
};

// The TpOpShape of a model's operator call on `tp` ranks.
TpOpShape TpOpShapeOf(const std::string& name, TpOpKind kind, const models::TpGemmDims& d, int tp);

}  // namespace tessera::compass
