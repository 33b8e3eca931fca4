// The seeded inputs of a tensor-parallel operator (tp_op.h) and its single-process reference,
// against which every overlap strategy is checked. Inputs are seeded: element values in
// [-1, 1) from core::Rng seeded by (seed, rank, tensor), so every rank (and a test) can
// rebuild every rank's inputs and compute the reference.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "compass/tp_op.h"
#include "core/status.h"

namespace tessera::compass {

// The seeded inputs of `rank`: x (x_count) and w (w_count: W, or dY for kAllGatherWgrad).
void TpOpInputs(const TpOpShape& s, uint64_t seed, int rank, std::vector<float>* x,
                std::vector<float>* w);

// Rank `rank`'s output computed in one process from every rank's inputs with kernels::Gemm
// (sums over ranks in double). The reference every strategy is checked against.
core::StatusOr<std::vector<float>> TpOpReference(const TpOpShape& s, uint64_t seed, int rank);

// max |got - want| / max |want| (0 when both are all zero); InvalidArgument on a size mismatch.
core::StatusOr<double> RelativeError(const std::vector<float>& got, const std::vector<float>& want);

}  // namespace tessera::compass
