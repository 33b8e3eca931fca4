// Seeded test data, a single-process reference and a checker for the AttentionEngine,
// shared by the fake-backend tests, the MPI tests and `tessera zellige run --check`.
//
// Data: the value of tensor `which` (kQ, kK, kV, kDo) of sequence `seq` (its index in the
// batch) at token t is a function of (seed, which, seq, t) only: H*D uniforms in [-1, 1)
// from core::Rng. Every rank therefore generates exactly its own slices without
// communication, and the reference regenerates the whole sequence.
// Reference: per sequence, the whole sequence's Q, K, V, dO through the tiled kernels
// (kernels/attention.h) in one call on one rank, fp32: O, dQ, dK, dV.
// Error: per tensor (O, dQ, dK, dV) and per rank, abs = max |engine - reference| over the
// rank's rows, rel = abs / max |reference| over the same rows (core::TensorError: a norm-wise
// relative error; element-wise ratios are meaningless near zero). The stats keep the max
// over tensors.
// RandomPlan draws a legal plan over aligned power-of-two rank blocks (the planners'
// family) with random configs and sequence lengths. All functions are reentrant.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/tensor_error.h"
#include "workload/batch.h"
#include "zellige/engine/attention_engine.h"
#include "zellige/plan.h"

namespace tessera::zellige::engine {

enum class TestTensor { kQ = 0, kK = 1, kV = 2, kDo = 3 };

// Rows [t0, t1) of tensor `which` of sequence `seq`: (t1 - t0, H, D) into out.
void FillTokens(uint64_t seed, TestTensor which, int seq, int64_t t0, int64_t t1, int heads,
                int head_dim, float* out);

// The engine's packed local buffers (local_tokens, H, D) filled with the seeded data.
struct LocalData {
  std::vector<float> q, k, v, d_o;
};
LocalData MakeLocalData(const AttentionEngine& engine, uint64_t seed);

// The tensor comparison (ErrorStats, TensorError, CompareTensors, WorstOf) is core's
// (core/tensor_error.h); these names keep the engine's callers unchanged.
using core::CompareTensors;
using core::ErrorStats;
using core::TensorError;
using core::WorstOf;

// Compares the engine outputs (packed local layout) with the reference slices.
core::StatusOr<ErrorStats> CompareWithReference(const AttentionEngine& engine,
                                                const workload::Batch& batch, uint64_t seed,
                                                const std::vector<float>& o,
                                                const std::vector<float>& dq,
                                                const std::vector<float>& dk,
                                                const std::vector<float>& dv);

// Creates an engine, runs Forward and Backward once on the seeded data, compares.
core::StatusOr<ErrorStats> RunEngineCheck(const zellige::Plan& plan, const workload::Batch& batch,
                                          int heads, int head_dim, uint64_t seed,
                                          comm::Communicator* world);

// A random legal plan for num_ranks (a power of two) and its batch: 1..max_seqs sequences of
// min_tokens..max_tokens tokens (at least the degree), each on a random aligned block with a
// random config of that degree whose h divides heads.
struct RandomCase {
  zellige::Plan plan;
  workload::Batch batch;
};
RandomCase RandomPlan(core::Rng& rng, int num_ranks, int heads, int max_seqs, int64_t min_tokens,
                      int64_t max_tokens);

// A placement of sequence `seq` under (q, h, k) on `ranks` (tests and benchmarks).
zellige::Placement MakePlacement(int seq, int q, int h, int k, std::vector<int> ranks);

// A batch of sequences with the given token counts (ids 0..n-1).
workload::Batch MakeBatch(const std::vector<int64_t>& tokens);

}  // namespace tessera::zellige::engine
