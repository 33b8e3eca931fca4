// EngineAttentionBackend: a models::AttentionBackend that runs SmallDit's attention through
// the distributed AttentionEngine (attention_engine.h), so a model trains under a zellige plan.
//
// Layout: the model's packed batch on this rank must be the engine's local layout, one
// segment per local placement in plan order (LocalPlacement::size() tokens each):
// shape.cu_seqlens_q == cu_seqlens_k == prefix sums of local_placements()[i].size(), heads
// and head_dim equal to the engine's, not causal (the engine's attention is bidirectional).
// Forward/Backward return InvalidArgument otherwise.
// Build the model's batch with MakeLocalFlowMatchingBatch (dit_training.h) to get it.
//
// Layers: SmallDit calls Forward once per layer in layer order and Backward in reverse
// order. The backend keeps one ForwardState per layer (num_layers of them): Forward call n
// (counted from construction) is layer n % num_layers; Backward uses the state of the most
// recent Forward not yet consumed (a stack), so Forward x L then Backward x L works for any
// number of steps. Backward without a pending Forward is FailedPrecondition.
// lse: the engine keeps the global log-sum-exp inside its ForwardState; Forward writes 0 to
// the caller's lse buffer and Backward ignores lse, q, k, v and o (the state has them).
// Errors of the engine (communication included) pass through. Collective: every rank of the
// engine's world must call Forward/Backward together.
// Ownership: the engine is borrowed and must outlive the backend. Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "models/attention_backend.h"
#include "zellige/engine/attention_engine.h"

namespace tessera::zellige::engine {

class EngineAttentionBackend final : public models::AttentionBackend {
 public:
  EngineAttentionBackend(AttentionEngine* engine, int num_layers);

  core::Status Forward(const kernels::AttentionShape& shape, const float* q, const float* k,
                       const float* v, float* o, float* lse) override;
  core::Status Backward(const kernels::AttentionShape& shape, const float* q, const float* k,
                        const float* v, const float* o, const float* d_o, const float* lse,
                        float* dq, float* dk, float* dv) override;

  AttentionEngine& engine() { return *engine_; }

 private:
  core::Status CheckShape(const kernels::AttentionShape& shape) const;

  AttentionEngine* engine_;
  std::vector<ForwardState> states_;  // one per layer
  int64_t forward_calls_ = 0;
  std::vector<int> pending_;  // layers whose Forward state awaits Backward (stack)
};

}  // namespace tessera::zellige::engine
