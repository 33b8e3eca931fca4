// Plan: where and how every sequence of a batch runs in one training step.
// Each Placement gives a sequence (by its index in the batch) a parallel config and an
// ordered rank set (|ranks| == config.degree()). The vector order is the placement order.
// Issue order on every rank: descending split degree, then placement order, so all
// participants of a collective reach it in the same order (no deadlock).
// JSON: {"planner": NAME, "num_ranks": N, "placements": [{"seq": i, "tokens": L,
//        "q": 1, "h": 1, "k": 1, "ranks": [..]}, ...]}. Plain value; thread-safe to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "workload/batch.h"
#include "zellige/parallel_config.h"
#include "zellige/planner_stats.h"

namespace tessera::zellige {

struct Placement {
  int seq = 0;  // index into workload::Batch::sequences
  ParallelConfig config;
  std::vector<int> ranks;
};

struct Plan {
  std::string planner;
  int num_ranks = 0;
  std::vector<Placement> placements;
  // For MILP planners: the proven relative gap of the makespan solve (0 = optimal);
  // -1 for heuristics. Not serialised with the plan.
  double solver_gap = -1;
  // For the Zellige planners: stage times and the proven bound. Not serialised.
  PlannerStats stats = {};
};

// Checks that every sequence of `batch` is placed exactly once, ranks are distinct and in
// [0, num_ranks), |ranks| = q*h*k, h divides `heads`, and each rank gets >= 1 token.
core::Status ValidatePlan(const Plan& plan, const workload::Batch& batch, int heads);
// Indices into plan.placements in issue order (descending degree, then placement order).
std::vector<int> IssueOrder(const Plan& plan);
// Number of placements with degree > 1.
int SplitCount(const Plan& plan);

// Token ownership: a sequence of L tokens placed on lambda = q*h*k ranks is cut into lambda
// contiguous chunks; member i of the placement's rank set owns tokens
// [ChunkBegin(L, lambda, i), ChunkBegin(L, lambda, i + 1)), ChunkBegin = floor(i * L / lambda)
// (chunk sizes differ by at most one). The engine (engine/attention_engine.h) runs this layout.
inline int64_t ChunkBegin(int64_t tokens, int lambda, int i) { return i * tokens / lambda; }

// One rank's share of one placement: its tokens [token_begin, token_end) of sequence `seq`.
struct RankShard {
  int placement = 0;  // index into plan.placements
  int seq = 0;        // index into batch.sequences
  int member = 0;     // the rank's index in the placement's rank set
  int64_t token_begin = 0;
  int64_t token_end = 0;
  ParallelConfig config;
  int64_t tokens() const { return token_end - token_begin; }
};

// For every rank 0..plan.num_ranks-1, its shards in issue order (IssueOrder). The plan must
// pass ValidatePlan for `batch` (placements' seq indices in range, ranks in range).
std::vector<std::vector<RankShard>> RankShards(const Plan& plan, const workload::Batch& batch);

// The JSON form above, with each placement's "tokens" from `batch` (omitted for a placement
// whose seq is not in the batch). PlanFromJson reads it back to an equal plan (planner,
// num_ranks, placements; solver_gap is not serialised).
core::Json ToJson(const Plan& plan, const workload::Batch& batch);
// Parses and bounds every field before narrowing: num_ranks in [1, hw::kMaxClusterRanks], at
// most workload::kMaxBatchSequences placements, seq in [0, placements), q, h, k >= 1 with
// q*h*k <= num_ranks, exactly q*h*k ranks in [0, num_ranks), and "tokens" (optional) in
// [1, workload::kMaxSequenceTokens] with at most workload::kMaxBatchTokens in all. Whether
// the plan fits a batch and a model is ValidatePlan's. A key the format lacks is refused
// naming it ("placements[3]: unknown key 'rank', must be one of ..."). `source` prefixes
// messages.
core::StatusOr<Plan> PlanFromJson(const core::Json& j, const std::string& source);

}  // namespace tessera::zellige
