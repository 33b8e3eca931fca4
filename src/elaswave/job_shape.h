// JobShape: the shape of an ElasWave training job at its start -- data x pipeline x tensor
// parallel degrees, the model's layer slots and the batch -- and the world-id layout of its
// processes.
//
// Layer slots: a model of L transformer blocks has L + 2 slots, the unit a pipeline stage
// owns: slot 0 = the embeddings, slots 1..L = blocks 0..L-1, slot L + 1 = the final
// LayerNorm, head and loss. SlotName(s) names them in messages ("embedding", "block 3",
// "head").
//
// World ids: process w = (d * pp + s) * tp + r runs tensor-parallel rank r of pipeline stage s
// of data-parallel replica (pipeline) d. A tensor-parallel group (d, s) is the failure domain:
// when one of its processes dies, the whole group leaves the computation (its live members
// become spares), because the TP degree never changes.
//
// Batch: B sequences per step in micro-batches of b sequences, M = B / b micro-batches, which
// are spread over the pipelines (microbatch_counts.h).
//
// ValidateJobShape refuses, before any process starts, with InvalidArgument naming the field,
// the value and what is allowed: degrees < 1, dp * pp * tp != processes, pp > L (every stage
// needs a block), B % b != 0, M % dp != 0 (at the start every pipeline gets M / dp), tp not
// dividing the model's heads or FFN (checked by the model's own validation elsewhere).
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tessera::elaswave {

struct JobShape {
  int dp = 1;                // data-parallel replicas (pipelines)
  int pp = 1;                // pipeline stages per replica at the start
  int tp = 1;                // tensor-parallel degree (never changes)
  int num_blocks = 1;        // L transformer blocks (the model has L + 2 slots)
  int64_t global_batch = 1;  // B sequences per step
  int64_t micro_batch = 1;   // b sequences per micro-batch

  int processes() const { return dp * pp * tp; }
  int num_slots() const { return num_blocks + 2; }
  int64_t num_micro_batches() const { return micro_batch > 0 ? global_batch / micro_batch : 0; }
  int WorldId(int d, int s, int r) const { return (d * pp + s) * tp + r; }
  int ReplicaOf(int world_id) const { return world_id / (pp * tp); }
  int StageOf(int world_id) const { return (world_id / tp) % pp; }
  int TpRankOf(int world_id) const { return world_id % tp; }
};

// `processes`: the number of processes the user asked for (-1: dp * pp * tp, not checked).
core::Status ValidateJobShape(const JobShape& shape, int processes = -1);

// "embedding", "block i" or "head" for slot s of a model with `num_blocks` blocks.
std::string SlotName(int slot, int num_blocks);

}  // namespace tessera::elaswave
