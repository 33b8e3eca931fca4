// dp: whole sequences only (pure data parallelism), balanced by multiway Karmarkar-Karp
// over the modeled whole-sequence time (as verl/slime balance their batches). Memory is
// not considered: a sequence too large for one rank makes the plan OOM in the simulator.
#include "zellige/karmarkar_karp.h"
#include "zellige/planner.h"

namespace tessera::zellige {
namespace {

class DpPlanner : public Planner {
 public:
  core::StatusOr<Plan> MakePlan(const PlanningProblem& pb) const override {
    const int n = pb.cost.cluster().num_ranks();
    std::vector<int> rank_of = KarmarkarKarp(WholeTimes(pb.batch, pb.cost), n);
    Plan plan{"dp", n, {}};
    for (size_t s = 0; s < rank_of.size(); ++s) {
      plan.placements.push_back({static_cast<int>(s), ParallelConfig{}, {rank_of[s]}});
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Planner> NewDpPlanner() { return std::make_unique<DpPlanner>(); }

PlannerEntry DpPlannerEntry() {
  return {{.disjoint_groups = true, .in_all = true},
          "dp",
          "whole sequences, Karmarkar-Karp balancing of modeled time",
          &NewDpPlanner,
          {}};
}

}  // namespace tessera::zellige
