// Distributed flow-matching training of SmallDit (models/small_dit.h) under a zellige plan:
// sequence parallelism through the AttentionEngine (via EngineAttentionBackend) plus data
// parallelism over whole sequences, on the ranks of the engine's world.
//
// Per step, on every rank (collective over the world):
//  1. MakeLocalFlowMatchingBatch: the rank's token ranges of its placements, in plan order
//     (= the engine's packed local layout), built with models::MakeFlowMatchingChunks, so
//     each chunk has its sequence's timestep and noise and position_offset = chunk begin.
//     Sequence ids are the indices in batch.sequences (the single-process reference uses the
//     same ids: MakeFlowMatchingBatch over ids 0..S-1).
//  2. SmallDit Forward / Backward with the adapter; the loss uses the GLOBAL normaliser
//     batch.total_tokens() * in_channels, so the ranks' gradients sum to the single-process
//     gradient.
//  3. One AllReduceSum over Gradients() (flat buffer), one over the loss (double), then the
//     AdamW step with model.DecayMask() (identical on every rank: same bits after all-reduce).
// A rank without placements contributes zero gradients and loss. The returned loss is the
// global loss before the update (equal on every rank).
// Errors: InvalidArgument for a model whose heads / head_dim disagree with the engine or a
// bad step; engine and communication errors pass through (a broken world should be aborted
// by the caller). Thread-safety: one thread per rank.
#pragma once

#include <cstdint>

#include "comm/communicator.h"
#include "core/status.h"
#include "models/adamw.h"
#include "models/flow_matching.h"
#include "models/small_dit.h"
#include "workload/batch.h"
#include "zellige/engine/attention_engine.h"
#include "zellige/engine/engine_attention_backend.h"

namespace tessera::zellige::engine {

// The rank's local batch (see step 1), or an empty batch (no cu_seqlens) when the rank has
// no placements.
core::StatusOr<models::FlowMatchingBatch> MakeLocalFlowMatchingBatch(const AttentionEngine& engine,
                                                                     const workload::Batch& batch,
                                                                     uint64_t seed,
                                                                     int64_t channels,
                                                                     int64_t step);

// Wall time of the phases of one DistributedTrainStep on this rank (seconds).
struct StepPhases {
  double forward_s = 0;   // local batch creation + SmallDit Forward + loss
  double backward_s = 0;  // SmallDit Backward (attention backward through the engine)
  double tail_s = 0;      // gradient and loss all-reduce (includes waiting for peers) + AdamW
};

// One distributed training step (steps 1-3). acts is scratch reused between calls; backend
// must wrap the engine whose plan covers `batch`, with model.config().num_layers layers.
// When `phases` is non-null it receives the phase times (the profiler's measurements).
core::StatusOr<double> DistributedTrainStep(models::SmallDit& model, models::AdamW& optimizer,
                                            EngineAttentionBackend& backend,
                                            comm::Communicator& world, const workload::Batch& batch,
                                            uint64_t seed, int64_t step,
                                            models::SmallDitActivations* acts,
                                            StepPhases* phases = nullptr);

}  // namespace tessera::zellige::engine
