// PlannerStats: where a Zellige planner's solve time went (wall clock, milliseconds) and the
// bound it proved, carried on the Plan (plan.h) and printed by `zellige plan` and
// `bench-planner`. Stages (zellige.md, "Planners"):
//   catalog_ms       grouping, option pricing, catalog cut (and, hierarchical, the cell split)
//   model_ms         stage 1 model build: greedy warm starts and the MILP's rows
//   cbc_ms           CBC: the makespan solve and the split-minimising solve
//   split_search_ms  the combinatorial split search (split_search.h)
//   stage2_ms        whole-sequence filler packing (filler_packing.h)
// With a hierarchical plan the stage times are summed over cells (threads included), so
// their sum may exceed the wall clock. lower_bound_s is a proven lower bound on the
// makespan of the MILP (no waits) over the whole cluster: max(least total work / N,
// heaviest sequence) or CBC's bound; 0 when unknown. Plain value; thread-safe to read.
#pragma once

namespace tessera::zellige {

struct PlannerStats {
  double catalog_ms = 0;
  double model_ms = 0;
  double cbc_ms = 0;
  double split_search_ms = 0;
  double stage2_ms = 0;
  int cells = 0;               // cells planned independently (0: one flat solve)
  int cell_ranks = 0;          // ranks per cell (0: flat)
  int cells_planned = 0;       // distinct cells solved (identical cells reuse one plan)
  double lower_bound_s = 0;    // proven bound on the max per-rank load
  double max_rank_load_s = 0;  // the plan's max per-rank load (the MILP's makespan)
  bool deadline_hit = false;   // the planner's time budget ran out; the best plan was kept
  double time_limit_s = 0;     // that budget, seconds (0: none)

  // Adds the stage times of `o` (not its bound or cell counts).
  void AddStages(const PlannerStats& o) {
    catalog_ms += o.catalog_ms;
    model_ms += o.model_ms;
    cbc_ms += o.cbc_ms;
    split_search_ms += o.split_search_ms;
    stage2_ms += o.stage2_ms;
  }
  // (max_rank_load_s - lower_bound_s) / max_rank_load_s, or -1 when no bound is known.
  double Gap() const {
    return lower_bound_s > 0 && max_rank_load_s > 0
               ? (max_rank_load_s - lower_bound_s) / max_rank_load_s
               : -1;
  }
};

}  // namespace tessera::zellige
