// The MILP of the exact compact formulation (ecf_solver.h), as handed to CBC (solver/), and
// the values it gives a placement (one AnchorPick per sequence plus fluid per rank).
//
// Variables, in this order: u[g, j, B] (integer, 0..n_g) for every kept option j of group g
// and every aligned block B of the option's degree (group by group, option by option, block
// by block); f_r >= 0 (seconds of fluid work) per rank when there is fluid; the makespan T
// (seconds, >= t_lb, objective coefficient 1).
// Rows, in this order: assignment per group; load (<= T) and memory (<= cap) per rank; the
// fluid total; the symmetry rows per parent block, largest first, when on.
// Plain values and pure functions; thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "solver/milp_model.h"
#include "zellige/ecf_solver.h"
#include "zellige/parallel_config.h"
#include "zellige/placement_options.h"
#include "zellige/split_search.h"

namespace tessera::zellige {

// An EcfProblem as the model sees it: with one_var_per_sequence, `groups` and `options` hold
// one group per sequence.
struct EcfInstance : EcfProblem {
  std::vector<int> orig_group;    // per group: its index in the EcfProblem's groups
  std::vector<RankBlock> blocks;  // AlignedBlocks(num_ranks)
  double fluid_mem_per_s = 0;     // rho, bytes per second of fluid work (0 without fluid)
};

// The variable u[group, option, blocks[block]].
struct EcfVar {
  int group = 0;
  int option = 0;
  int block = 0;
};

struct EcfModel {
  solver::MilpModel milp;
  std::vector<EcfVar> vars;              // the u variables
  std::vector<int> var_index;            // MILP index of vars[i]
  std::vector<std::vector<int>> var_at;  // [g][j * blocks + b] -> index into vars, or -1
  std::vector<int> f_var;                // MILP index of f_r; empty without fluid
  int t_var = -1;                        // MILP index of T
  double t_lb = 0;                       // max(least total work / N, heaviest sequence) (s)
  std::vector<RankBlock> parents;        // blocks of size >= 2, largest first
};

// The model over the options whose per-rank time is at most max_option_time_s (1 + 1e-9):
// one slower than an upper bound on T can appear in no better solution. Symmetry rows (work
// inside a left child >= work inside its right sibling) only with `symmetry_breaking`.
EcfModel BuildEcfModel(const EcfInstance& inst, double max_option_time_s, bool symmetry_breaking);

// MILP values of a placement: `picks` (one per sequence) and `fluid_s` (per rank; empty for
// none), T the larger of t_lb and the most loaded rank. With `symmetry_breaking` sibling
// subtrees are first mirrored, top-down, so that every left child holds at least as much
// work as its right sibling. nullopt when `picks` is empty or uses an option the model
// dropped.
std::optional<std::vector<double>> PlacementValues(const EcfInstance& inst, const EcfModel& model,
                                                   bool symmetry_breaking,
                                                   std::vector<AnchorPick> picks,
                                                   std::vector<double> fluid_s);

}  // namespace tessera::zellige
