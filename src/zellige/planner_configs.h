// PlannerConfigs: every parallel config the registered planners may place on a cluster of
// `num_ranks` ranks with their default options. A measured profile prices configs one by one
// (profile.h), so loading one checks this list up front and names a missing config, instead
// of a planner failing on it later; the profiler measures exactly these configs.
//
// The degrees (PlannerDegrees) are
//   - every power of two <= N: the planners' rank-set family (parallel_config.h, aligned
//     power-of-two blocks: zellige, joint, joint-binary, dynamic-cp), and the groups usp and
//     knapformer fall back to for sequences shorter than their group;
//   - N itself: usp places every long enough sequence on all ranks;
//   - the bag sizes of knapformer's DefaultBagSpec(N) and the halvings it falls back to for
//     sequences shorter than a bag (N = 6: bags of 3 and 1, so degree 3).
// For a power-of-two N these are just the powers of two <= N. A knapformer.bags option may ask
// for other sizes; RunPlanner (evaluate.h) then names the config the cost model cannot price.
// The configs are ConfigsOfDegree(d, heads) for each degree d, degrees ascending.
// Pure functions; thread-safe.
#pragma once

#include <vector>

#include "zellige/parallel_config.h"

namespace tessera::zellige {

// Ascending, without duplicates; empty for num_ranks < 1.
std::vector<int> PlannerDegrees(int num_ranks);
std::vector<ParallelConfig> PlannerConfigs(int num_ranks, int heads);

}  // namespace tessera::zellige
