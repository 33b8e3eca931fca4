// Hierarchical Zellige planning for large clusters (zellige.md, "Planning at scale").
// The N ranks are cut into P = N / C aligned cells of C ranks; every sequence is dealt to one
// cell and each cell is planned on its own by the two-stage planner (two_stage_planner.h)
// with the options of degree <= C. Aligned blocks inside a cell are aligned blocks of the
// cluster, and the options of one degree cost the same on every aligned block, so a cell's
// plan, shifted by its first rank, is a plan of the cluster.
//   Cell size (ChooseCellRanks): the smallest power of two C >= min_cell_ranks that divides
//   N, gives every group an option of degree <= C and keeps every sequence's least time at
//   those degrees <= half the average per-rank work; C = N (flat: no cells) when none does or
//   N / C < 2.
//   Dealing (DealToCells): longest processing time first over the sequences, heaviest group
//   first: each goes to the cell with the least work so far (work = the least-work option's
//   time x degree at degrees <= C; ties: fewer tokens, then the lower cell), so cells end
//   within about one light sequence of each other.
//   Symmetry: cells dealt the same multiset of groups are planned once and the plan reused.
//   Threads: cells are planned on `threads` threads (CBC itself runs one at a time).
//   Time budget: with a deadline, each cell's CBC limits are cut to its share of the time
//   left; cells started after the deadline take the greedy warm start only (no CBC, no
//   split search) and stats.deadline_hit is set.
// Bound: SimpleLowerBoundS over all options (every degree up to N), proven for any plan.
// Progress: `progress(done, total)` after each cell, from the planning threads (serialised).
// Thread-safe; the result does not depend on the thread count unless the deadline is hit.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "core/status.h"
#include "zellige/ecf_solver.h"
#include "zellige/placement_options.h"
#include "zellige/two_stage_planner.h"

namespace tessera::zellige {

struct CellPlanSettings {
  int min_cell_ranks = 16;            // power of two
  int threads = 1;                    // >= 1
  bool reuse_identical_cells = true;  // false: every cell solved (the symmetry-free cost)
  EcfSettings ecf;                    // per cell
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::function<void(int done, int total)> progress;
};

// C as described above (N when the cluster is planned flat). `options` per group, all
// degrees up to num_ranks.
int ChooseCellRanks(const std::vector<SeqGroup>& groups,
                    const std::vector<std::vector<GroupOption>>& options, int num_ranks,
                    int min_cell_ranks);

// Per cell, its groups (the same group order and per-group data as `groups`, with the
// cell's share of the sequences; empty groups dropped).
std::vector<std::vector<SeqGroup>> DealToCells(const std::vector<SeqGroup>& groups,
                                               const std::vector<std::vector<GroupOption>>& options,
                                               int cells, int cell_ranks);

// Plans the cluster cell by cell (cell_ranks from ChooseCellRanks, < num_ranks). Placements
// use global ranks; stats sum the cells' stage times and carry the cluster's bound.
core::StatusOr<TwoStageResult> PlanInCells(const std::vector<SeqGroup>& groups,
                                           const std::vector<std::vector<GroupOption>>& options,
                                           int num_ranks, int cell_ranks, double mem_cap_bytes,
                                           const CellPlanSettings& settings);

}  // namespace tessera::zellige
