// The Zellige two-stage plan of one range of ranks (zellige.md, "Planners", steps 2-4),
// shared by the flat planner (the whole cluster) and the hierarchical one (each cell):
// catalog cut of the groups (filler groups above 2% of the average per-rank work become
// anchors); stage 1, the ECF over the anchors with the fillers as fluid work
// (ecf_solver.h); stage 2, whole fillers packed greedily (filler_packing.h). When the fillers
// land more than 0.2% above stage 1, the heaviest filler group is promoted and the range
// re-planned (at most 3 times, not after `deadline`); the plan with the least max rank load
// is kept.
// Ranks are local (0 .. num_ranks - 1); times are seconds, memory bytes. Fails with a Status
// whose message starts "planning failed" (a sequence fits no rank, no placement found).
// Pure function of its input (CBC's time limits aside); thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "core/status.h"
#include "zellige/ecf_solver.h"
#include "zellige/placement_options.h"
#include "zellige/plan.h"

namespace tessera::zellige {

struct TwoStageInput {
  int num_ranks = 0;
  double mem_cap_bytes = 0;                       // per rank
  std::vector<SeqGroup> groups;                   // descending whole time (GroupSequences)
  std::vector<std::vector<GroupOption>> options;  // per group; degrees <= num_ranks
  EcfSettings settings;
  std::optional<std::chrono::steady_clock::time_point> deadline;  // no re-plan after it
};

struct TwoStageResult {
  std::vector<Placement> placements;  // local ranks; anchors, then fillers
  double stage1_makespan_s = 0;       // the ECF's makespan (fillers as fluid)
  double max_rank_load_s = 0;         // max over ranks of the placed work
  double lower_bound_s = 0;           // proven bound on the range's max rank load
  double solver_gap = 0;              // the makespan solve's proven relative gap
  PlannerStats stats;                 // stage times (catalog_ms is the catalog cut)
};

core::StatusOr<TwoStageResult> PlanTwoStage(const TwoStageInput& input);

// Least total work over the groups' options / num_ranks and the heaviest sequence's least
// time: a lower bound on any plan's max rank load with these options.
double SimpleLowerBoundS(const std::vector<SeqGroup>& groups,
                         const std::vector<std::vector<GroupOption>>& options, int num_ranks);

}  // namespace tessera::zellige
