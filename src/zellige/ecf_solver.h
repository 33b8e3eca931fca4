// The exact compact formulation (ECF) of zellige.md, solved with CBC (solver/).
//
// Groups of identical sequences get integer counts instead of one binary per sequence:
//   u[g, j, B] = how many sequences of group g run option j on aligned block B
//   sum_{j,B} u[g, j, B] = n_g                                  (every sequence placed)
//   load_r = sum_{(g,j,B) : r in B} A[g,j] u[g,j,B] + f_r <= T   (per-rank time)
//   mem_r  = sum_{(g,j,B) : r in B} M[g,j] u[g,j,B] + rho f_r <= cap
// f_r >= 0 is optional "fluid" filler work (sum f_r = fluid_time_s, rho = fluid memory per
// second of work): stage 1 of the two-stage planner reserves room for the fillers that
// stage 2 places greedily. Lexicographic: minimise T; then, with T <= (1 + tol) T*,
// minimise the number of split sequences (degree > 1).
// Strengthening: T >= max(total work / N, heaviest sequence's best time); symmetry
// breaking between sibling blocks (work inside the left child >= work inside the right:
// swapping two sibling subtrees is an automorphism of the topology); a greedy LPT warm
// start, canonicalised to satisfy the symmetry constraints.
// With `one_var_per_sequence` every sequence is its own group with 0/1 variables
// (the "joint-binary" formulation that shows why grouping matters).
// Debugging: TESSERA_LOG=debug (core/log.h) prints the groups, options, bounds, greedy
// candidates and solve outcomes to stderr; TESSERA_DEBUG_CBC=1 turns on CBC's own log for the
// makespan solve.
// Stateless; thread-safe (CBC calls are serialised inside solver/).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "core/status.h"
#include "solver/cbc_solver.h"
#include "zellige/parallel_config.h"
#include "zellige/placement_options.h"

namespace tessera::zellige {

struct EcfProblem {
  int num_ranks = 0;
  std::vector<SeqGroup> groups;
  std::vector<std::vector<GroupOption>> options;  // per group; each non-empty
  double mem_cap_bytes = 0;                       // per rank
  double fluid_time_s = 0;
  double fluid_mem_bytes = 0;
  bool one_var_per_sequence = false;
};

struct EcfSettings {
  double time_limit_s = 10;         // makespan solve
  double split_time_limit_s = 10;   // split-minimising solve; <= 0: split search only, no CBC
  double relative_gap = 1e-6;       // makespan solve stops within this proven gap
  double split_tolerance = 1e-3;    // second solve keeps T <= (1 + tol) T*
  double split_bytes_weight = 0.5;  // second objective: splits + weight x bytes / bound
  bool minimize_splits = true;
  bool symmetry_breaking = true;
  bool warm_start = true;
  // Optional: CBC's state during each solve, with its stage ("makespan", then "splits"):
  // solver::SolveOptions::progress at progress_interval_s, and a final report per solve.
  std::function<void(const char* stage, const solver::SolveProgress&)> progress;
  double progress_interval_s = 1.0;
  // Optional: no CBC solve runs past it; the split solve is skipped once it has passed (the
  // combinatorial split search still runs: it is bounded by its move count).
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

struct EcfAssignment {
  int group = 0;
  int option = 0;  // index into options[group]
  RankBlock block;
  int count = 0;
};

struct EcfResult {
  std::vector<EcfAssignment> assignments;
  std::vector<double> load_s;     // per rank, anchors only
  std::vector<double> mem_bytes;  // per rank, anchors only
  std::vector<double> fluid_s;    // per rank, the fluid filler work of the solution
  double makespan_s = 0;          // T after the makespan solve (incl. fluid)
  double lower_bound_s = 0;       // proven bound on T
  double gap = 0;                 // (T - bound) / T of the makespan solve
  bool proven_optimal = false;
  int split_sequences = 0;
  double solve_ms = 0;         // both solves, model building included
  double build_ms = 0;         // greedy warm starts and the MILP's rows
  double cbc_ms = 0;           // both CBC solves
  double split_search_ms = 0;  // the combinatorial split search
  int variables = 0;
};

core::StatusOr<EcfResult> SolveEcf(const EcfProblem& problem, const EcfSettings& settings);

}  // namespace tessera::zellige
