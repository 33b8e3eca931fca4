// Minimax layer partition: which contiguous range of layer slots each pipeline stage runs, so
// that the slowest stage -- the pipeline's step period tau -- is as fast as possible, and,
// among the partitions that reach it, the one that moves the fewest bytes of state.
//
// Inputs: slots 0..L-1 (job_shape.h), each with compute seconds per micro-batch (forward +
// backward at speed 1), state bytes (parameters, gradients, optimizer moments: what moves when
// the slot changes stage) and activation bytes per in-flight micro-batch; stages 0..S-1 in
// pipeline order, each with a relative speed v_j > 0, a point-to-point cost per micro-batch in
// seconds, a memory cap in bytes (+inf: none) and the set of slots it holds today.
//
// Stage j running slots [k, i) takes  cost(j, k, i) = sum_{l=k}^{i-1} c_l / v_j + p2p_j  per
// micro-batch and needs  mem(j, k, i) = sum state_l + (S - j) * sum act_l  bytes (1F1B keeps
// S - j micro-batches in flight at stage j). The DP
//   F[0][0] = 0,  F[j][i] = min_{k < i} max(F[j-1][k], cost(j-1, k, i))  over mem <= cap,
// gives tau* = F[S][L] in O(S L^2). A second DP over the same ranges, restricted to
// cost <= tau* (1 + 1e-9), minimises the bytes moved: the state bytes of every slot a stage
// runs but does not hold today. Ties go to the earlier boundary, so the result is a pure
// function of the inputs (every process computes the same plan).
//
// Errors: InvalidArgument for empty or mismatched inputs, non-positive speeds, negative or
// non-finite costs, or S > L; Infeasible "no partition fits ..." when the memory caps leave
// no partition (the caller then dissolves the pipeline).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "core/status.h"

namespace tessera::elaswave {

struct SlotCost {
  double compute_s = 0;     // forward + backward of one micro-batch at speed 1
  int64_t state_bytes = 0;  // what moves when the slot changes stage
  int64_t act_bytes = 0;    // per in-flight micro-batch
};

struct StageResources {
  double speed = 1.0;                                              // v_j, relative
  double p2p_s = 0.0;                                              // per micro-batch
  double mem_cap_bytes = std::numeric_limits<double>::infinity();  // none by default
  std::set<int> held;                                              // slots whose state it holds now
};

struct Partition {
  std::vector<int> begin;   // stage j runs slots [begin[j], begin[j+1]); size S + 1
  double tau_s = 0;         // the slowest stage's cost per micro-batch
  int64_t moved_bytes = 0;  // state bytes of slots a stage runs but did not hold
  int num_stages() const { return static_cast<int>(begin.size()) - 1; }
  int StageOfSlot(int slot) const;
};

core::StatusOr<Partition> MinimaxPartition(const std::vector<SlotCost>& slots,
                                           const std::vector<StageResources>& stages);

// The plain reference: every way to cut L slots into S non-empty ranges, enumerated (for
// tests; exponential, L <= 16).
core::StatusOr<Partition> BruteForcePartition(const std::vector<SlotCost>& slots,
                                              const std::vector<StageResources>& stages);

}  // namespace tessera::elaswave
