#include "zellige/engine/dit_training.h"

#include <chrono>
#include <span>
#include <string>
#include <vector>

namespace tessera::zellige::engine {

core::StatusOr<models::FlowMatchingBatch> MakeLocalFlowMatchingBatch(const AttentionEngine& engine,
                                                                     const workload::Batch& batch,
                                                                     uint64_t seed,
                                                                     int64_t channels,
                                                                     int64_t step) {
  std::vector<models::SequenceChunk> chunks;
  for (const LocalPlacement& lp : engine.local_placements()) {
    if (lp.seq < 0 || lp.seq >= static_cast<int>(batch.sequences.size())) {
      return core::InvalidArgument("MakeLocalFlowMatchingBatch: placement sequence " +
                                   std::to_string(lp.seq) + " is not in the batch of " +
                                   std::to_string(batch.sequences.size()));
    }
    models::SequenceChunk c;
    c.seq_id = lp.seq;
    c.seq_len = batch.sequences[lp.seq].tokens;
    c.begin = lp.token_begin;
    c.end = lp.token_end;
    chunks.push_back(c);
  }
  if (chunks.empty()) return models::FlowMatchingBatch{};
  return models::MakeFlowMatchingChunks(seed, channels, chunks, step);
}

core::StatusOr<double> DistributedTrainStep(models::SmallDit& model, models::AdamW& optimizer,
                                            EngineAttentionBackend& backend,
                                            comm::Communicator& world, const workload::Batch& batch,
                                            uint64_t seed, int64_t step,
                                            models::SmallDitActivations* acts, StepPhases* phases) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  Clock::time_point t_fwd = t0, t_bwd = t0;
  const models::SmallDitConfig& cfg = model.config();
  AttentionEngine& engine = backend.engine();
  if (cfg.num_heads != engine.heads() || cfg.head_dim() != engine.head_dim()) {
    return core::InvalidArgument(
        "DistributedTrainStep: model heads x head_dim = " + std::to_string(cfg.num_heads) + " x " +
        std::to_string(cfg.head_dim()) + " but the engine has " + std::to_string(engine.heads()) +
        " x " + std::to_string(engine.head_dim()));
  }
  ASSIGN_OR_RETURN(models::FlowMatchingBatch local,
                   MakeLocalFlowMatchingBatch(engine, batch, seed, cfg.in_channels, step));
  model.ZeroGradients();
  double loss = 0;
  if (!local.cu_seqlens.empty()) {
    RETURN_IF_ERROR(model.Forward(local.View(), backend, acts));
    std::vector<float> d_out(acts->output.size());
    loss = models::FlowMatchingLoss(acts->output, local.target, d_out,
                                    batch.total_tokens() * cfg.in_channels);
    t_fwd = Clock::now();
    RETURN_IF_ERROR(model.Backward(*acts, d_out, backend));
    t_bwd = Clock::now();
  } else {
    t_fwd = t_bwd = Clock::now();
  }
  RETURN_IF_ERROR(world.AllReduceSum(model.Gradients()));
  RETURN_IF_ERROR(world.AllReduceSum(std::span<double>(&loss, 1)));
  RETURN_IF_ERROR(optimizer.Step(model.Parameters(), model.Gradients(), model.DecayMask()));
  if (phases != nullptr) {
    auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
    phases->forward_s = secs(t_fwd - t0);
    phases->backward_s = secs(t_bwd - t_fwd);
    phases->tail_s = secs(Clock::now() - t_bwd);
  }
  return loss;
}

}  // namespace tessera::zellige::engine
