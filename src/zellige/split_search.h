// Fast combinatorial search for the second, lexicographic objective of the ECF
// (ecf_solver.h): with every rank's load <= a limit T_lim (seconds), place each anchor
// sequence (an option of its group on an aligned block of the option's degree) so that the
// summed split cost is small. The split cost of an option is 0 for a whole sequence, else
// 1 + 0.5 x (its bytes over all participating ranks) / bytes_scale: fewest split sequences,
// then the least attention communication (bytes_scale bounds all bytes, so all of it is
// worth less than one split).
//
// Fluid filler work (fluid_time_s seconds in all, fluid_mem_per_s bytes per second of it,
// spread freely over ranks) must fit: a placement is feasible iff every rank has
//   load_r <= T_lim,  mem_r <= cap,  and  sum_r min(T_lim - load_r, (cap - mem_r) / rho)
//   >= fluid_time_s  (rho = fluid_mem_per_s; without rho only the time term).
// LowSplitGreedy builds a placement: sequences heaviest group first, each on the cheapest
// option and block that keeps the block's load <= an anchor target and leaves `reserve`
// bytes on every rank for the fluid (ties: the fullest block); if none does, the option
// and block with the least load after it. ImproveSplits is a local search (moving one
// sequence, then two at once) that only takes moves keeping feasibility and lowering the
// total cost: it never raises the makespan above T_lim nor the split count of its input.
// Plain values and pure functions; thread-safe.
#pragma once

#include <vector>

#include "zellige/parallel_config.h"
#include "zellige/placement_options.h"

namespace tessera::zellige {

// One sequence's placement: option `option` of group `group` on blocks[block].
struct AnchorPick {
  int group = 0;
  int option = 0;
  int block = 0;
};

struct SplitSearchSpace {
  int num_ranks = 0;
  std::vector<RankBlock> blocks;                  // AlignedBlocks(num_ranks)
  std::vector<std::vector<GroupOption>> options;  // per group
  std::vector<int> group_sizes;                   // sequences per group
  double mem_cap_bytes = 0;                       // per rank
  double fluid_time_s = 0;
  double fluid_mem_per_s = 0;  // rho, bytes per second of fluid work
  double bytes_scale = 0;      // see BytesScale
  double bytes_weight = 0.5;   // < 1: all bytes are worth less than one split
};

// Sum over sequences of the most bytes any of their options moves (over all ranks).
double BytesScale(const std::vector<std::vector<GroupOption>>& options,
                  const std::vector<int>& group_sizes);
// 0 for a whole sequence, else 1 + bytes_weight x bytes x degree / bytes_scale.
double SplitCost(const GroupOption& o, double bytes_scale, double bytes_weight = 0.5);
double TotalSplitCost(const SplitSearchSpace& space, const std::vector<AnchorPick>& picks);
// Whether `picks` is feasible under `limit_s` (see the contract above).
bool FitsLimit(const SplitSearchSpace& space, const std::vector<AnchorPick>& picks, double limit_s);
// One pick per sequence (group by group, ascending), or empty when a sequence fits no
// block's memory.
std::vector<AnchorPick> LowSplitGreedy(const SplitSearchSpace& space, double target_s,
                                       double reserve_bytes);
// Pilot method over LowSplitGreedy: for each sequence in greedy order, every option is
// tried with the greedy completing the rest; the option whose completion scores best
// (TotalSplitCost + (excess over `limit_s`) / (1e-3 limit_s)) is fixed. Returns the best
// completion seen (possibly infeasible; see RepairLimit), or empty as LowSplitGreedy.
std::vector<AnchorPick> PilotSplitGreedy(const SplitSearchSpace& space, double limit_s,
                                         double target_s, double reserve_bytes);
// Moves sequences one at a time until `picks` is feasible under `limit_s`, each time the move
// that removes the most excess (load over the limit, memory over the capacity, fluid without
// room) per unit of added split cost; moves that add no cost first. At most `max_moves`.
// Returns whether the result is feasible.
bool RepairLimit(const SplitSearchSpace& space, double limit_s, std::vector<AnchorPick>* picks,
                 int max_moves = 32);
// Lowers TotalSplitCost of a feasible `picks` while keeping it feasible under `limit_s`.
// `max_evaluations` bounds the work (candidate moves checked). Returns the number of moves
// taken; an infeasible input is left as it is.
int ImproveSplits(const SplitSearchSpace& space, double limit_s, std::vector<AnchorPick>* picks,
                  long max_evaluations = 2'000'000);

}  // namespace tessera::zellige
