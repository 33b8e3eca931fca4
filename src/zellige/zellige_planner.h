// The Zellige planners (zellige.md, Components 2), registered as:
//   zellige       two-stage (two_stage_planner.h): catalog cut (then filler groups heavier
//                 than 2% of the average per-rank work are promoted to anchors); ECF over
//                 anchors with the fillers as fluid work; greedy whole-sequence filler
//                 packing. Above 32 ranks, hierarchical (cell_planner.h): sequences dealt to
//                 cells of aligned blocks (16 ranks by default), each cell planned two-stage;
//                 flat again when a cell fails (a cell may lack memory the cluster has).
//   joint         the same ECF over all sequences: the exact reference.
//   joint-binary  one 0/1 variable per sequence and option (no grouping).
// Options (PlannerOptions): "zellige.time_limit_s" (default 1), "zellige.gap" (1e-3),
// "zellige.split_time_limit_s" (default none: the combinatorial split search of
// split_search.h only; a value adds CBC's split-minimising solve for that long),
// "zellige.split_tolerance" (1e-3: loads <= (1 + tol) T*), "zellige.split_bytes_weight"
// (0.5: splits + weight x bytes / bound), "zellige.total_time_limit_s" (default none: the
// budget of the whole planner; when hit the best plan so far is returned with
// stats.deadline_hit and its gap over the bound), "zellige.cell_ranks" (16, a power of two:
// the least cell size), "zellige.threads" (2: cells planned in parallel),
// "zellige.reuse_cells" (on: identical cells share a plan; off), "joint.time_limit_s"
// (default kJointTimeLimitS = 60: the budget of the whole joint plan, three quarters of it for
// the makespan solve and what is left for the split-minimising solve; when hit the best plan
// so far is returned with stats.deadline_hit and its gap over the bound), "joint.gap"
// (default 1e-6). The joint planners report CBC's incumbent, bound and gap through
// PlanningProblem::solver_progress.
// zellige fills Plan::stats (stage times, the proven bound; planner_stats.h) and reports
// progress (cells planned) through PlanningProblem::progress.
// Plans never exceed memory (the MILP holds the capacity; fillers keep headroom). A failure
// is a Status whose message starts "planning failed".
#pragma once

#include "zellige/ecf_solver.h"
#include "zellige/planner.h"

namespace tessera::zellige {

// The joint planners' default time limit for a whole plan, seconds (joint.time_limit_s).
inline constexpr double kJointTimeLimitS = 60;

struct ExactPlacement {
  std::vector<std::vector<GroupOption>> options;  // per group
  EcfResult result;
};

// Builds the ECF problem for `groups` (all placed by the MILP) and solves it.
core::StatusOr<ExactPlacement> PlanGroupsExactly(const std::vector<SeqGroup>& groups,
                                                 const CostModel& cost, const EcfSettings& settings,
                                                 double fluid_time_s, double fluid_mem_bytes,
                                                 bool one_var_per_sequence);

// Turns the assignments into placements (each group's sequences in batch order).
void AppendPlacements(const std::vector<SeqGroup>& groups, const ExactPlacement& exact, Plan* plan);

// Max over ranks of the summed per-rank time of `plan`: the MILP's makespan (no waits).
double MaxRankLoad(const Plan& plan, const workload::Batch& batch, const CostModel& cost);

// Reads a positive number option, or returns `fallback` when absent.
core::StatusOr<double> PositiveOption(const PlannerOptions& options, const std::string& key,
                                      double fallback);

}  // namespace tessera::zellige
