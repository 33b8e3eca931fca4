// adaptiveload: compute-aware data parallelism. A sequence of L tokens costs L^p, with p
// the log-log slope of the modeled whole time between the batch's shortest and longest
// sequence (1 <= p <= 2). Budget = sum of costs / N. Sequences in descending cost; ranks
// in order, each rank takes the next sequences that keep its sum <= budget (first fit);
// what is left goes to the least-loaded rank. Whole sequences; no memory term.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "zellige/planner.h"

namespace tessera::zellige {
namespace {

class AdaptiveLoadPlanner : public Planner {
 public:
  core::StatusOr<Plan> MakePlan(const PlanningProblem& pb) const override {
    const int n = pb.cost.cluster().num_ranks();
    const auto& seqs = pb.batch.sequences;
    int64_t lo = seqs[0].tokens, hi = seqs[0].tokens;
    for (const auto& s : seqs) {
      lo = std::min(lo, s.tokens);
      hi = std::max(hi, s.tokens);
    }
    double p = 1.0;
    if (hi > lo) {
      p = std::log(pb.cost.WholeTime(hi) / pb.cost.WholeTime(lo)) /
          std::log(static_cast<double>(hi) / lo);
      p = std::clamp(p, 1.0, 2.0);
    }
    std::vector<double> c;
    for (const auto& s : seqs) c.push_back(std::pow(static_cast<double>(s.tokens), p));
    const double budget = std::accumulate(c.begin(), c.end(), 0.0) / n;
    std::vector<int> order(seqs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return c[a] > c[b]; });
    std::vector<int> rank_of(seqs.size(), -1);
    std::vector<double> load(n, 0.0);
    for (int r = 0; r < n; ++r) {
      for (int s : order) {
        if (rank_of[s] >= 0) continue;
        if (load[r] + c[s] <= budget) {
          load[r] += c[s];
          rank_of[s] = r;
        }
      }
    }
    for (int s : order) {
      if (rank_of[s] >= 0) continue;
      int r = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      load[r] += c[s];
      rank_of[s] = r;
    }
    Plan plan{"adaptiveload", n, {}};
    for (size_t s = 0; s < seqs.size(); ++s) {
      plan.placements.push_back({static_cast<int>(s), ParallelConfig{}, {rank_of[s]}});
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Planner> NewAdaptiveLoadPlanner() {
  return std::make_unique<AdaptiveLoadPlanner>();
}

PlannerEntry AdaptiveLoadPlannerEntry() {
  return {{.disjoint_groups = true, .in_all = true},
          "adaptiveload",
          "compute-aware DP: a rank takes sequences while sum L^p <= budget",
          &NewAdaptiveLoadPlanner,
          {}};
}

}  // namespace tessera::zellige
