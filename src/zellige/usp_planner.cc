// usp: every sequence over all N ranks (xDiT's USP): Ulysses over the largest head-count
// divisor that fits in a node, ring attention across the rest. A sequence shorter than N
// tokens runs on the first 2^floor(log2 L) ranks.
#include "zellige/planner.h"

namespace tessera::zellige {
namespace {

class UspPlanner : public Planner {
 public:
  core::StatusOr<Plan> MakePlan(const PlanningProblem& pb) const override {
    const auto& cl = pb.cost.cluster();
    const int n = cl.num_ranks();
    const int heads = pb.cost.model().heads;
    Plan plan{"usp", n, {}};
    for (const auto& s : pb.batch.sequences) {
      int g = n;
      if (s.tokens < n) {
        g = 1;
        while (g * 2 <= s.tokens) g *= 2;
      }
      // Ulysses degree: divides heads, ranks_per_node and g.
      int h = 1;
      for (int c = 1; c <= g; ++c)
        if (g % c == 0 && heads % c == 0 && cl.ranks_per_node % c == 0) h = c;
      Placement p;
      p.seq = s.id;
      p.config = {1, h, g / h};
      p.ranks = RankBlock{0, g}.Ranks();
      plan.placements.push_back(std::move(p));
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Planner> NewUspPlanner() { return std::make_unique<UspPlanner>(); }

PlannerEntry UspPlannerEntry() {
  return {{.disjoint_groups = true, .in_all = true},
          "usp",
          "every sequence over all ranks: Ulysses inside a node x ring across",
          &NewUspPlanner,
          {}};
}

}  // namespace tessera::zellige
