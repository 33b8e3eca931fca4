#include "zellige/planner.h"

namespace tessera::zellige {

const std::vector<PlannerEntry>& PlannerRegistry() {
  static const std::vector<PlannerEntry> kEntries = {
      {"zellige", "two-stage: exact MILP (CBC) over anchor sequences, greedy fillers", false, true,
       &NewZelligePlanner},
      {"joint", "exact compact MILP over all sequences (the reference; slow)", false, false,
       &NewJointPlanner},
      {"joint-binary", "joint MILP with one binary per sequence and option (very slow)", false,
       false, &NewJointBinaryPlanner},
      {"usp", "every sequence over all ranks: Ulysses inside a node x ring across", true, true,
       &NewUspPlanner},
      {"knapformer", "KnapFormer greedy over fixed bags of ranks (Ulysses inside a bag)", true,
       true, &NewKnapFormerPlanner},
      {"dp", "whole sequences, Karmarkar-Karp balancing of modeled time", true, true,
       &NewDpPlanner},
      {"adaptiveload", "compute-aware DP: a rank takes sequences while sum L^p <= budget", true,
       true, &NewAdaptiveLoadPlanner},
      {"dynamic-cp", "per-sequence power-of-two ring CP, smallest degree whose memory fits", false,
       true, &NewDynamicCpPlanner},
  };
  return kEntries;
}

core::StatusOr<const PlannerEntry*> FindPlanner(const std::string& name) {
  std::string all;
  for (const auto& e : PlannerRegistry()) {
    if (name == e.name) return &e;
    all += (all.empty() ? "" : ", ") + std::string(e.name);
  }
  return core::NotFound("planner: got '" + name + "', must be one of " + all + " or all");
}

ParallelConfig UlyssesRingConfig(int g, int heads) {
  int h = 1;
  for (int c = 1; c <= g; ++c)
    if (g % c == 0 && heads % c == 0) h = c;
  return {1, h, g / h};
}

std::vector<double> WholeTimes(const workload::Batch& batch, const CostModel& cost) {
  std::vector<double> t;
  t.reserve(batch.sequences.size());
  for (const auto& s : batch.sequences) t.push_back(cost.WholeTime(s.tokens));
  return t;
}

}  // namespace tessera::zellige
