// SlotStore: one worker's training state for the layer slots it holds, at its tensor-parallel
// rank: per slot the parameters, the AdamW moments and step count, and the gradient bound that
// sets the slot's fixed-point exponent (fixed_point_grad.h) for the next step. It is what moves
// when a slot changes hands (Pack / Unpack, a flat fp32 buffer carried bit for bit), what the
// in-memory snapshots copy after each committed step, and what the digests fingerprint.
//
// Packed form of one slot of n parameters: params (n) | m (n) | v (n) | AdamW step (int64 as
// two floats' bits) | gradient bound (double as two floats' bits): 3n + 4 floats.
// Digest(slot): FNV-1a over the packed form: equal digests = equal state, bit for bit.
// Errors: InvalidArgument for a slot not held, a packed buffer of the wrong length, a snapshot
// step not kept (NotFound).
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "core/status.h"
#include "models/adamw.h"

namespace tessera::elaswave {

struct SlotState {
  std::vector<float> params;
  models::AdamW opt;
  double grad_bound = 0;  // max |summed gradient| of the last step (0: none yet)
};

class SlotStore {
 public:
  explicit SlotStore(const models::AdamWOptions& options) : options_(options) {}

  bool Holds(int slot) const { return slots_.count(slot) > 0; }
  std::vector<int> Slots() const;
  // Adds a slot with `params` and fresh optimizer state.
  core::Status Add(int slot, std::span<const float> params);
  void Drop(int slot) { slots_.erase(slot); }
  core::StatusOr<SlotState*> Get(int slot);

  static int64_t PackedSize(int64_t num_params) { return 3 * num_params + 4; }
  core::StatusOr<std::vector<float>> Pack(int slot) const;
  // Adds or replaces `slot` from a packed buffer.
  core::Status Unpack(int slot, std::span<const float> packed);
  uint64_t Digest(int slot) const;

  // Copies every held slot as the snapshot of `step` (replacing one of that step).
  void Snapshot(int64_t step);
  // Replaces the state with the snapshot of `step`.
  core::Status Restore(int64_t step);
  bool HasSnapshot(int64_t step) const { return snapshots_.count(step) > 0; }
  // Forgets snapshots older than `step`.
  void PruneSnapshotsBefore(int64_t step);

 private:
  models::AdamWOptions options_;
  std::map<int, SlotState> slots_;
  std::map<int64_t, std::map<int, std::vector<float>>> snapshots_;
};

}  // namespace tessera::elaswave
