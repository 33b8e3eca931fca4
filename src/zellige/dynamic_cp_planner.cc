// dynamic-cp (Megatron-style hybrid / dynamic context parallelism): every sequence gets
// the smallest power-of-two ring-CP degree k whose per-rank memory fits the capacity on
// its own, then sequences in descending modeled time go to the aligned block of k ranks
// (the planners' rank-set family) that minimises the block's maximum load after adding
// it, among blocks whose memory still fits (any block if none fits).
#include <algorithm>
#include <numeric>

#include "zellige/planner.h"

namespace tessera::zellige {
namespace {

class DynamicCpPlanner : public Planner {
 public:
  core::StatusOr<Plan> MakePlan(const PlanningProblem& pb) const override {
    const int n = pb.cost.cluster().num_ranks();
    const double cap = pb.cost.MemoryCapacityBytes();
    const auto& seqs = pb.batch.sequences;
    std::vector<int> degree(seqs.size());
    std::vector<double> time(seqs.size()), mem(seqs.size());
    for (size_t s = 0; s < seqs.size(); ++s) {
      int k = 1;
      while (k * 2 <= n && k * 2 <= seqs[s].tokens &&
             pb.cost.MemoryBytes(seqs[s].tokens, {1, 1, k}) > cap)
        k *= 2;
      if (pb.cost.MemoryBytes(seqs[s].tokens, {1, 1, k}) > cap) {
        return core::Infeasible("planning failed: sequence " + std::to_string(s) + " (" +
                                std::to_string(seqs[s].tokens) +
                                " tokens) does not fit in memory even over " + std::to_string(k) +
                                " ranks");
      }
      degree[s] = k;
      time[s] = pb.cost.Cost(seqs[s].tokens, {1, 1, k}, RankBlock{0, k}.Ranks()).time_s();
      mem[s] = pb.cost.MemoryBytes(seqs[s].tokens, {1, 1, k});
    }
    std::vector<int> order(seqs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return time[a] > time[b]; });
    std::vector<double> load(n, 0.0), used(n, 0.0);
    std::vector<int> first(seqs.size());
    for (int s : order) {
      const int k = degree[s];
      int best = -1;
      double best_load = 0;
      bool best_fits = false;
      for (int b = 0; b + k <= n; b += k) {
        double mx = 0, mem_mx = 0;
        for (int r = b; r < b + k; ++r) {
          mx = std::max(mx, load[r]);
          mem_mx = std::max(mem_mx, used[r]);
        }
        bool fits = mem_mx + mem[s] <= cap;
        if (best < 0 || (fits && !best_fits) || (fits == best_fits && mx < best_load)) {
          best = b;
          best_load = mx;
          best_fits = fits;
        }
      }
      first[s] = best;
      for (int r = best; r < best + k; ++r) {
        load[r] += time[s];
        used[r] += mem[s];
      }
    }
    Plan plan{"dynamic-cp", n, {}};
    for (size_t s = 0; s < seqs.size(); ++s) {
      plan.placements.push_back({static_cast<int>(s), ParallelConfig{1, 1, degree[s]},
                                 RankBlock{first[s], degree[s]}.Ranks()});
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Planner> NewDynamicCpPlanner() { return std::make_unique<DynamicCpPlanner>(); }

PlannerEntry DynamicCpPlannerEntry() {
  return {{.disjoint_groups = false, .in_all = true},
          "dynamic-cp",
          "per-sequence power-of-two ring CP, smallest degree whose memory fits",
          &NewDynamicCpPlanner,
          {}};
}

}  // namespace tessera::zellige
