// Flow-matching training on seeded synthetic latents for SmallDit (small_dit.h).
//
// Data: sequence `seq_id` of length L has clean latents x0 (L, C) that are a smooth per-sequence
// pattern, x0[t, c] = a * sin(2 pi f t / L + phi + c pi / 8), with amplitude a in [0.8, 1.2),
// frequency f in {1, 2, 3} and phase phi in [0, 2 pi) drawn from Rng(seed).Fork(seq_id), so
// the data set is fixed by the seed. For training step `step`, Rng(seed).Fork(seq_id)
// .Fork(step + 1) draws t ~ U(0, 1) and then noise e (L, C) ~ N(0, 1) in token-major order;
// x_t = (1 - t) x0 + t e and the target velocity is v = e - x0. Any process can therefore
// regenerate any sequence's batch from (seed, seq_id, length, step) alone.
// Loss: mean over all T * C elements of (prediction - v)^2.
// Chunks: under sequence parallelism a rank holds token ranges [begin, end) of sequences;
// MakeFlowMatchingChunks gives exactly those rows of the whole-sequence batch (same x0, t,
// noise), with position offsets for SmallDit, and FlowMatchingLoss takes the GLOBAL element
// count as normaliser so that the ranks' gradients sum to the single-process gradient.
//
// Thread-safety: free functions are reentrant; TrainStep mutates the model and optimizer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "models/adamw.h"
#include "models/attention_backend.h"
#include "models/small_dit.h"

namespace tessera::models {

// A packed flow-matching batch (owning).
struct FlowMatchingBatch {
  std::vector<int64_t> cu_seqlens;        // (S + 1)
  std::vector<float> x_t;                 // (T, C) noisy latents (the model input)
  std::vector<float> timesteps;           // (S)
  std::vector<float> target;              // (T, C) velocity e - x0
  std::vector<int64_t> position_offsets;  // (S) first token's position in its sequence

  DitBatch View() const { return {x_t, cu_seqlens, timesteps, position_offsets}; }
};

// Tokens [begin, end) of sequence seq_id, which has seq_len tokens in all.
struct SequenceChunk {
  int64_t seq_id = 0;
  int64_t seq_len = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

// Writes the clean latents x0 (length, channels) of sequence seq_id.
void SyntheticLatents(uint64_t seed, int64_t seq_id, int64_t length, int64_t channels, float* x0);

// Builds the batch of the given sequences (ids and lengths, same count >= 1, lengths >= 1,
// channels >= 1; else InvalidArgument) for training step `step` (>= 0).
core::StatusOr<FlowMatchingBatch> MakeFlowMatchingBatch(uint64_t seed, int64_t channels,
                                                        std::span<const int64_t> seq_ids,
                                                        std::span<const int64_t> lengths,
                                                        int64_t step);

// The batch of the given chunks, one segment each (>= 1 chunks, 0 <= begin < end <= seq_len,
// channels >= 1, step >= 0; else InvalidArgument). A chunk's rows equal rows [begin, end) of
// the whole sequence's batch, and its position offset is begin.
core::StatusOr<FlowMatchingBatch> MakeFlowMatchingChunks(uint64_t seed, int64_t channels,
                                                         std::span<const SequenceChunk> chunks,
                                                         int64_t step);

// sum (prediction - target)^2 / N with N = normalizer, or the local element count when
// normalizer is 0; writes d_prediction = 2 (prediction - target) / N when it is non-empty.
// Sizes must match and normalizer must be >= 0 (CHECK).
double FlowMatchingLoss(std::span<const float> prediction, std::span<const float> target,
                        std::span<float> d_prediction, int64_t normalizer = 0);

// One optimisation step: zero gradients, Forward, loss, Backward, AdamW step (weight decay on
// the weight matrices only, model.DecayMask()). Returns the loss
// before the update. acts is scratch (reused between calls).
core::StatusOr<double> TrainStep(SmallDit& model, AdamW& optimizer, const FlowMatchingBatch& batch,
                                 AttentionBackend& backend, SmallDitActivations* acts);

}  // namespace tessera::models
