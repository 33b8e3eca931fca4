// Placement options of the Zellige planners (zellige.md, "Components", 2).
//
// Sequences with the same token count form a group (they have identical options). An
// option is a parallel config theta of degree lambda on an aligned block of lambda ranks
// (parallel_config.h); because aligned blocks of one size all span the same kind of links,
// its per-rank time and memory depend only on (L, theta, lambda). Per (group, lambda) a few
// configs are kept (see GroupOptions), and only those whose memory fits the per-rank
// capacity. The catalog cut splits the groups into fillers (light, placed whole
// by a greedy) and anchors (heavy, placed by the MILP).
// Plain values and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "workload/batch.h"
#include "zellige/cost_model.h"

namespace tessera::zellige {

struct SeqGroup {
  int64_t tokens = 0;
  std::vector<int> seqs;    // sequence indices in the batch, ascending
  double whole_time_s = 0;  // modeled whole-sequence time (the bucket weight w_b)
  double whole_mem_bytes = 0;
};

struct GroupOption {
  ParallelConfig config;
  int degree = 1;         // lambda = block size
  double time_s = 0;      // per participating rank
  double mem_bytes = 0;   // per participating rank
  double comm_bytes = 0;  // attention communication per participating rank
};

// Groups of identical sequences, in descending whole time (ties: fewer tokens first).
std::vector<SeqGroup> GroupSequences(const workload::Batch& batch, const CostModel& cost);
// Options of a group whose memory fits `mem_cap_bytes`, by ascending degree. Per degree,
// among the configs within 2% of the fastest's time, the kept ones are the time/bytes
// front (by ascending time, each sends fewer communication bytes than every faster kept
// one; the fastest first) plus the one with the least memory if the front lacks it.
// The front's middle points matter: the second (split-minimising) solve may give up at
// most 1e-3 of the makespan, which often admits a config slightly slower than the
// fastest but not the fewest-bytes one.
// Degrees are powers of two up to the cluster size and the token count.
std::vector<GroupOption> GroupOptions(int64_t tokens, const CostModel& cost, double mem_cap_bytes);
// Catalog cut over groups sorted by whole time descending: returns the number of anchor
// groups (a prefix, >= 1). The cut minimises the sum, over both sides, of squared
// deviations of log(w) from the side's mean; fillers are the lighter side. Ties go to the
// smaller filler side (zellige.md: "ties to the smaller k" with buckets sorted ascending).
int CatalogCut(const std::vector<SeqGroup>& groups_desc);

}  // namespace tessera::zellige
