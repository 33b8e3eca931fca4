// ReferenceLossCurve: the single-process flow-matching training that a distributed
// DistributedTrainStep run (dit_training.h) must reproduce: SmallDit with
// LocalAttentionBackend on the WHOLE batch (sequence ids 0..S-1 = indices in
// batch.sequences, lengths = their tokens), same data seed and step numbers 0..steps-1,
// AdamW with model.DecayMask(). Returns the loss before each update (steps values).
// Errors: InvalidArgument for steps < 1, an empty batch or a bad config / options; model
// errors pass through. Thread-safety: reentrant (owns its model and optimizer).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "models/adamw.h"
#include "models/small_dit.h"
#include "zellige/workload.h"

namespace tessera::runtime {

core::StatusOr<std::vector<double>> ReferenceLossCurve(const models::SmallDitConfig& config,
                                                       const models::AdamWOptions& options,
                                                       const zellige::Batch& batch, uint64_t seed,
                                                       int steps);

}  // namespace tessera::runtime
