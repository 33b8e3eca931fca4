#include "zellige/planner_configs.h"

#include <set>

#include "zellige/knapformer_planner.h"

namespace tessera::zellige {

std::vector<int> PlannerDegrees(int num_ranks) {
  if (num_ranks < 1) return {};
  std::set<int> degrees;
  for (int d = 1; d <= num_ranks; d *= 2) degrees.insert(d);
  degrees.insert(num_ranks);  // usp
  auto bags = ParseBagSpec(DefaultBagSpec(num_ranks), num_ranks);
  if (bags.ok()) {
    for (const Bag& b : *bags) {
      for (int g = b.size; g >= 1; g /= 2) degrees.insert(g);  // knapformer's fallback halves
    }
  }
  return {degrees.begin(), degrees.end()};
}

std::vector<ParallelConfig> PlannerConfigs(int num_ranks, int heads) {
  std::vector<ParallelConfig> out;
  for (int d : PlannerDegrees(num_ranks)) {
    for (const ParallelConfig& c : ConfigsOfDegree(d, heads)) out.push_back(c);
  }
  return out;
}

}  // namespace tessera::zellige
