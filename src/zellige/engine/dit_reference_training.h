// The single-process flow-matching training that a distributed DistributedTrainStep run
// (dit_training.h) must reproduce, and the comparison of a distributed run's first step with
// it (`tessera zellige run --train --check`).
//
// Reference: SmallDit with LocalAttentionBackend on the WHOLE batch (sequence ids 0..S-1 =
// indices in batch.sequences, lengths = their tokens), same data seed and step numbers
// 0..steps-1, AdamW with model.DecayMask(). RunReferenceTraining returns the loss before each
// update, and from step 0 (before its update) the gradient vector and the forward activations
// (model output and every layer's attention output, rows in batch order).
// ReferenceLossCurve is its loss curve alone.
//
// First-step check (CompareFirstStep), on one rank of a distributed run after its step 0:
//  - gradient: the rank's all-reduced gradient vector (model.Gradients() right after
//    DistributedTrainStep of step 0; the AdamW step does not modify it) against the reference
//    gradient, one TensorError (engine_check.h) per named parameter tensor
//    (SmallDit::ParameterTensors()); the stats keep the max abs and the max rel over tensors.
//  - output: the rank's activations of step 0 (the `acts` DistributedTrainStep filled) against
//    the matching rows of the reference: for each local placement (engine.local_placements(),
//    row lp.offset + r locally = row cu_seqlens[lp.seq] + lp.token_begin + r of the
//    reference), the model output (T, C_in) and each layer's attention output (T, Hd) are
//    each one TensorError over the rank's rows; the stats keep the max over these tensors. A
//    rank without placements has nothing to compare (zero error).
// Relative errors are norm-wise per tensor: max |a - b| / max(max |ref|, 1e-30).
//
// Errors: InvalidArgument for steps < 1, an empty batch or a bad config / options; model
// errors pass through; CompareFirstStep returns InvalidArgument when sizes or the local
// layout disagree with the reference. Thread-safety: reentrant (owns its model and optimizer).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/adamw.h"
#include "models/small_dit.h"
#include "workload/batch.h"
#include "zellige/engine/attention_engine.h"
#include "zellige/engine/engine_check.h"

namespace tessera::zellige::engine {

struct ReferenceTraining {
  std::vector<double> losses;                     // (steps) before each update
  std::vector<float> first_gradients;             // step 0 gradient vector, before its update
  models::SmallDitActivations first_activations;  // step 0 forward on the whole batch
};

core::StatusOr<ReferenceTraining> RunReferenceTraining(const models::SmallDitConfig& config,
                                                       const models::AdamWOptions& options,
                                                       const workload::Batch& batch, uint64_t seed,
                                                       int steps);

core::StatusOr<std::vector<double>> ReferenceLossCurve(const models::SmallDitConfig& config,
                                                       const models::AdamWOptions& options,
                                                       const workload::Batch& batch, uint64_t seed,
                                                       int steps);

struct FirstStepCheck {
  ErrorStats gradient;                // worst over the parameter tensors
  std::string worst_gradient_tensor;  // the tensor with the largest relative error
  ErrorStats output;                  // worst over the model output and attention outputs
  ErrorStats model_output;            // the model output alone
  ErrorStats attention_output;        // worst over the layers' attention outputs
};

// tensors: model.ParameterTensors(); gradients: the rank's all-reduced step-0 gradients;
// acts: the rank's step-0 activations; engine: the rank's engine (local layout).
core::StatusOr<FirstStepCheck> CompareFirstStep(const ReferenceTraining& reference,
                                                const std::vector<models::ParameterTensor>& tensors,
                                                std::span<const float> gradients,
                                                const models::SmallDitActivations& acts,
                                                const AttentionEngine& engine);

}  // namespace tessera::zellige::engine
