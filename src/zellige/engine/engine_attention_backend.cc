#include "zellige/engine/engine_attention_backend.h"

#include <algorithm>
#include <string>

#include "core/check.h"

namespace tessera::zellige::engine {

EngineAttentionBackend::EngineAttentionBackend(AttentionEngine* engine, int num_layers)
    : engine_(engine), states_(static_cast<size_t>(num_layers)) {
  CHECK(engine != nullptr);
  CHECK(num_layers >= 1);
}

core::Status EngineAttentionBackend::CheckShape(const kernels::AttentionShape& shape) const {
  RETURN_IF_ERROR(kernels::ValidateAttentionShape(shape));
  if (shape.causal) {
    return core::InvalidArgument(
        "EngineAttentionBackend: causal attention is not supported (the engine's ring and "
        "all-to-all attention are bidirectional, as in a DiT)");
  }
  if (shape.num_heads != engine_->heads() || shape.head_dim != engine_->head_dim()) {
    return core::InvalidArgument(
        "EngineAttentionBackend: shape heads x head_dim = " + std::to_string(shape.num_heads) +
        " x " + std::to_string(shape.head_dim) + " but the engine has " +
        std::to_string(engine_->heads()) + " x " + std::to_string(engine_->head_dim()));
  }
  const auto& local = engine_->local_placements();
  if (shape.num_seqs() != static_cast<int64_t>(local.size())) {
    return core::InvalidArgument(
        "EngineAttentionBackend: shape has " + std::to_string(shape.num_seqs()) +
        " sequences but this rank has " + std::to_string(local.size()) + " local placements");
  }
  for (size_t i = 0; i < local.size(); ++i) {
    const int64_t len = static_cast<int64_t>(i);
    if (shape.cu_seqlens_q[len] != local[i].offset || shape.seqlen_q(len) != local[i].size() ||
        shape.seqlen_k(len) != local[i].size() || shape.cu_seqlens_k[len] != local[i].offset) {
      return core::InvalidArgument("EngineAttentionBackend: segment " + std::to_string(i) +
                                   " has cu_seqlens [" + std::to_string(shape.cu_seqlens_q[len]) +
                                   ", " + std::to_string(shape.cu_seqlens_q[len + 1]) +
                                   ") but local placement " + std::to_string(i) + " is rows [" +
                                   std::to_string(local[i].offset) + ", " +
                                   std::to_string(local[i].offset + local[i].size()) + ")");
    }
  }
  return core::Status::Ok();
}

core::Status EngineAttentionBackend::Forward(const kernels::AttentionShape& shape, const float* q,
                                             const float* k, const float* v, float* o, float* lse) {
  RETURN_IF_ERROR(CheckShape(shape));
  const size_t n = static_cast<size_t>(engine_->local_tokens() * shape.num_heads * shape.head_dim);
  const int layer = static_cast<int>(forward_calls_ % static_cast<int64_t>(states_.size()));
  if (layer == 0) pending_.clear();  // a new step: drop states never consumed
  RETURN_IF_ERROR(engine_->Forward({q, n}, {k, n}, {v, n}, {o, n}, &states_[layer]));
  if (lse != nullptr) {
    std::fill(lse, lse + engine_->local_tokens() * shape.num_heads, 0.0f);
  }
  ++forward_calls_;
  pending_.push_back(layer);
  return core::Status::Ok();
}

core::Status EngineAttentionBackend::Backward(const kernels::AttentionShape& shape, const float* q,
                                              const float* k, const float* v, const float* o,
                                              const float* d_o, const float* /*lse*/, float* dq,
                                              float* dk, float* dv) {
  RETURN_IF_ERROR(CheckShape(shape));
  if (pending_.empty()) {
    return core::FailedPrecondition("EngineAttentionBackend: Backward without a pending Forward");
  }
  const int layer = pending_.back();
  const size_t n = static_cast<size_t>(engine_->local_tokens() * shape.num_heads * shape.head_dim);
  RETURN_IF_ERROR(engine_->Backward(states_[layer], {q, n}, {k, n}, {v, n}, {o, n}, {d_o, n},
                                    {dq, n}, {dk, n}, {dv, n}));
  pending_.pop_back();
  return core::Status::Ok();
}

}  // namespace tessera::zellige::engine
