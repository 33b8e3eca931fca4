#include "models/small_gpt.h"

#include <utility>

namespace tessera::models {

core::StatusOr<SmallGpt> SmallGpt::Create(const SmallGptConfig& c, int tp, int rank) {
  RETURN_IF_ERROR(ValidateSmallGptConfig(c, tp));
  ASSIGN_OR_RETURN(SmallGptStage stage,
                   SmallGptStage::Create(c, tp, rank, 0, SmallGptStage::NumSlots(c)));
  return SmallGpt(std::move(stage));
}

std::vector<TpLayerOp> SmallGpt::LayerTpCalls(int64_t m) const {
  const SmallGptConfig& c = config();
  return MegatronTpLayerOps(TpLayerShape{.hidden = c.hidden,
                                         .ffn = c.ffn_hidden,
                                         .heads = c.num_heads,
                                         .kv_heads = c.num_heads,
                                         .gated_mlp = false,
                                         .tp = tp(),
                                         .tokens = m});
}

core::StatusOr<double> SmallGpt::TrainStep(const GptBatch& batch, TensorParallelOps& ops,
                                           AdamW& opt) {
  ASSIGN_OR_RETURN(const double loss, ForwardBackward(batch, ops));
  RETURN_IF_ERROR(opt.Step(stage_.Parameters(), stage_.Gradients()));
  ++step_;
  return loss;
}

core::StatusOr<double> SmallGpt::ForwardBackward(const GptBatch& batch, TensorParallelOps& ops) {
  const MicroBatchKey key{.step = step_, .micro_batch = 0};
  const int64_t m = batch.num_tokens();
  stage_.ZeroGradients();
  core::StatusOr<double> sum = stage_.Forward(key, batch, {}, {}, ops);
  if (sum.ok()) {
    const core::Status s = stage_.Backward(key, {}, {}, 1.0f / static_cast<float>(m), ops);
    if (!s.ok()) sum = s;
  }
  if (!sum.ok()) {
    stage_.DiscardInFlight();
    return sum.status();
  }
  RETURN_IF_ERROR(stage_.ReduceReplicatedGradients(ops));
  return *sum / static_cast<double>(m);
}

}  // namespace tessera::models
