#include "zellige/zellige_planner.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <utility>

#include "zellige/filler_packing.h"

namespace tessera::zellige {

core::StatusOr<double> PositiveOption(const PlannerOptions& options, const std::string& key,
                                      double fallback) {
  auto it = options.find(key);
  if (it == options.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end != '\0' || !(v > 0) || v > 1e6) {
    return core::InvalidArgument(key + ": got '" + it->second + "', must be a number in (0, 1e6]");
  }
  return v;
}

core::StatusOr<ExactPlacement> PlanGroupsExactly(const std::vector<SeqGroup>& groups,
                                                 const CostModel& cost, const EcfSettings& settings,
                                                 double fluid_time_s, double fluid_mem_bytes,
                                                 bool one_var_per_sequence) {
  ExactPlacement out;
  EcfProblem pb;
  pb.num_ranks = cost.cluster().num_ranks();
  pb.groups = groups;
  pb.mem_cap_bytes = cost.MemoryCapacityBytes();
  pb.fluid_time_s = fluid_time_s;
  pb.fluid_mem_bytes = fluid_mem_bytes;
  pb.one_var_per_sequence = one_var_per_sequence;
  for (const auto& g : groups)
    out.options.push_back(GroupOptions(g.tokens, cost, pb.mem_cap_bytes));
  pb.options = out.options;
  ASSIGN_OR_RETURN(out.result, SolveEcf(pb, settings));
  return out;
}

void AppendPlacements(const std::vector<SeqGroup>& groups, const ExactPlacement& exact,
                      Plan* plan) {
  std::vector<size_t> next(groups.size(), 0);
  for (const auto& a : exact.result.assignments) {
    const GroupOption& o = exact.options[a.group][a.option];
    for (int c = 0; c < a.count; ++c) {
      const int seq = groups[a.group].seqs[next[a.group]++];
      plan->placements.push_back({seq, o.config, a.block.Ranks()});
    }
  }
}

namespace {}  // namespace

double MaxRankLoad(const Plan& plan, const workload::Batch& batch, const CostModel& cost) {
  std::vector<double> load(cost.cluster().num_ranks(), 0.0);
  for (const auto& p : plan.placements) {
    const double t = cost.Cost(batch.sequences[p.seq].tokens, p.config, p.ranks).time_s();
    for (int r : p.ranks) load[r] += t;
  }
  return *std::max_element(load.begin(), load.end());
}

namespace {

class ZelligePlanner : public Planner {
 public:
  core::StatusOr<Plan> MakePlan(const PlanningProblem& pb) const override {
    ASSIGN_OR_RETURN(double limit, PositiveOption(pb.options, "zellige.time_limit_s", 1.0));
    ASSIGN_OR_RETURN(double gap, PositiveOption(pb.options, "zellige.gap", 1e-3));
    ASSIGN_OR_RETURN(double split_limit,
                     PositiveOption(pb.options, "zellige.split_time_limit_s", 0.05));
    ASSIGN_OR_RETURN(double bytes_weight,
                     PositiveOption(pb.options, "zellige.split_bytes_weight", 0.5));
    ASSIGN_OR_RETURN(double split_tol, PositiveOption(pb.options, "zellige.split_tolerance", 1e-3));
    const CostModel& cost = pb.cost;
    std::vector<SeqGroup> groups = GroupSequences(pb.batch, cost);
    int k = CatalogCut(groups);
    // Fillers must be small against a rank's load: a filler group whose whole time exceeds
    // 2% of the average per-rank work is promoted to the anchors (small batches).
    double total = 0;
    for (const auto& g : groups) total += g.whole_time_s * g.seqs.size();
    const double avg = total / cost.cluster().num_ranks();
    const int m = static_cast<int>(groups.size());
    while (k < m && groups[k].whole_time_s > 0.02 * avg) ++k;
    // If whole-sequence fillers land more than 0.2% above the stage-1 makespan (they are
    // too coarse for the slack left), promote the heaviest filler group and plan again
    // (at most 3 times); keep the best plan.
    std::optional<Plan> best;
    double best_load = 0;
    for (int attempt = 0; attempt < 4; ++attempt) {
      ASSIGN_OR_RETURN(auto planned, PlanTwoStage(groups, k, pb, limit, gap, split_limit,
                                                  bytes_weight, split_tol));
      const double load = MaxRankLoad(planned.first, pb.batch, cost);
      if (!best || load < best_load) {
        best = std::move(planned.first);
        best_load = load;
      }
      if (load <= planned.second * (1 + 2e-3) || k >= m) break;
      ++k;
    }
    return std::move(*best);
  }

 private:
  // Plans with groups[0, k) as anchors; returns the plan and stage 1's makespan.
  static core::StatusOr<std::pair<Plan, double>> PlanTwoStage(
      const std::vector<SeqGroup>& groups, int k, const PlanningProblem& pb, double limit,
      double gap, double split_limit, double bytes_weight, double split_tol) {
    const CostModel& cost = pb.cost;
    std::vector<SeqGroup> anchors(groups.begin(), groups.begin() + k);
    std::vector<SeqGroup> fillers(groups.begin() + k, groups.end());
    double fluid_time = 0, fluid_mem = 0;
    std::vector<FillerItem> items;
    for (const auto& g : fillers) {
      for (int s : g.seqs) {
        items.push_back({s, g.whole_time_s, g.whole_mem_bytes});
        fluid_time += g.whole_time_s;
        fluid_mem += g.whole_mem_bytes;
      }
    }
    EcfSettings st;
    st.time_limit_s = limit;
    st.relative_gap = gap;
    st.split_time_limit_s = split_limit;
    st.split_bytes_weight = bytes_weight;
    st.split_tolerance = split_tol;
    ASSIGN_OR_RETURN(ExactPlacement exact,
                     PlanGroupsExactly(anchors, cost, st, fluid_time, fluid_mem, false));
    Plan plan{"zellige", cost.cluster().num_ranks(), {}, exact.result.gap};
    AppendPlacements(anchors, exact, &plan);
    std::vector<double> mem = exact.result.mem_bytes;
    ASSIGN_OR_RETURN(std::vector<int> rank_of,
                     PackFillers(items, exact.result.fluid_s, mem, cost.MemoryCapacityBytes()));
    for (size_t i = 0; i < items.size(); ++i) {
      plan.placements.push_back({items[i].seq, ParallelConfig{}, {rank_of[i]}});
    }
    return std::make_pair(std::move(plan), exact.result.makespan_s);
  }
};

class JointPlanner : public Planner {
 public:
  explicit JointPlanner(bool binary) : binary_(binary) {}
  core::StatusOr<Plan> MakePlan(const PlanningProblem& pb) const override {
    ASSIGN_OR_RETURN(double limit, PositiveOption(pb.options, "joint.time_limit_s", 60.0));
    ASSIGN_OR_RETURN(double gap, PositiveOption(pb.options, "joint.gap", 1e-6));
    std::vector<SeqGroup> groups = GroupSequences(pb.batch, pb.cost);
    EcfSettings st;
    st.time_limit_s = limit;
    st.relative_gap = gap;
    st.split_time_limit_s = limit;
    ASSIGN_OR_RETURN(ExactPlacement exact, PlanGroupsExactly(groups, pb.cost, st, 0, 0, binary_));
    Plan plan{
        binary_ ? "joint-binary" : "joint", pb.cost.cluster().num_ranks(), {}, exact.result.gap};
    AppendPlacements(groups, exact, &plan);
    return plan;
  }

 private:
  bool binary_;
};

}  // namespace

std::unique_ptr<Planner> NewZelligePlanner() { return std::make_unique<ZelligePlanner>(); }
std::unique_ptr<Planner> NewJointPlanner() { return std::make_unique<JointPlanner>(false); }
std::unique_ptr<Planner> NewJointBinaryPlanner() { return std::make_unique<JointPlanner>(true); }

namespace {
std::vector<core::OptionKey> JointOptionKeys() {
  return {{"joint.time_limit_s", "CBC time limit, seconds (default 60)"},
          {"joint.gap", "CBC relative gap (default 1e-6)"}};
}
}  // namespace

PlannerEntry ZelligePlannerEntry() {
  return {{.disjoint_groups = false, .in_all = true},
          "zellige",
          "two-stage: exact MILP (CBC) over anchor sequences, greedy fillers",
          &NewZelligePlanner,
          {{"zellige.time_limit_s", "CBC time limit of the makespan solve, seconds (default 1)"},
           {"zellige.gap", "CBC relative gap of the makespan solve (default 1e-3)"},
           {"zellige.split_time_limit_s",
            "CBC's part of the split-minimising solve, seconds (default 0.05)"},
           {"zellige.split_tolerance",
            "loads may exceed the makespan by this fraction to save splits (default 1e-3)"},
           {"zellige.split_bytes_weight",
            "weight of bytes / bound against splits in the second objective (default 0.5)"}}};
}

PlannerEntry JointPlannerEntry() {
  return {{.disjoint_groups = false, .in_all = false},
          "joint",
          "exact compact MILP over all sequences (the reference; slow)",
          &NewJointPlanner,
          JointOptionKeys()};
}

PlannerEntry JointBinaryPlannerEntry() {
  return {{.disjoint_groups = false, .in_all = false},
          "joint-binary",
          "joint MILP with one binary per sequence and option (very slow)",
          &NewJointBinaryPlanner,
          JointOptionKeys()};
}

}  // namespace tessera::zellige
