#include "zellige/zellige_planner.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <utility>

#include "core/parse_number.h"
#include "zellige/cell_planner.h"
#include "zellige/filler_packing.h"
#include "zellige/two_stage_planner.h"

namespace tessera::zellige {

core::StatusOr<double> PositiveOption(const PlannerOptions& options, const std::string& key,
                                      double fallback) {
  auto it = options.find(key);
  if (it == options.end()) return fallback;
  // core::ParseNumber: decimal or scientific text only (strtod took " 5", "0x10" and "5 ").
  core::StatusOr<double> v = core::ParseNumber(it->second, 0, 1e6, /*lo_open=*/true);
  if (!v.ok()) {
    return core::InvalidArgument(key + ": got '" + it->second.substr(0, 60) +
                                 "', must be a number in (0, 1e6]");
  }
  return *v;
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

// Reads an optional positive option; 0 when absent.
core::StatusOr<double> OptionalPositive(const PlannerOptions& options, const std::string& key) {
  if (options.find(key) == options.end()) return 0.0;
  return PositiveOption(options, key, 0.0);
}

// Reads a power-of-two count option in [1, 1 << 20], or `fallback`.
core::StatusOr<int> PowerOfTwoOption(const PlannerOptions& options, const std::string& key,
                                     int fallback) {
  ASSIGN_OR_RETURN(double v, PositiveOption(options, key, fallback));
  const int i = static_cast<int>(v);
  if (i != v || (i & (i - 1)) != 0) {
    return core::InvalidArgument(key + ": got '" + options.at(key) +
                                 "', must be a power of two in [1, 1e6]");
  }
  return i;
}

class ZelligePlanner : public Planner {
 public:
  core::StatusOr<Plan> MakePlan(const PlanningProblem& pb) const override {
    const auto t0 = std::chrono::steady_clock::now();
    EcfSettings st;
    ASSIGN_OR_RETURN(st.time_limit_s, PositiveOption(pb.options, "zellige.time_limit_s", 1.0));
    ASSIGN_OR_RETURN(st.relative_gap, PositiveOption(pb.options, "zellige.gap", 1e-3));
    ASSIGN_OR_RETURN(st.split_time_limit_s,
                     OptionalPositive(pb.options, "zellige.split_time_limit_s"));
    ASSIGN_OR_RETURN(st.split_bytes_weight,
                     PositiveOption(pb.options, "zellige.split_bytes_weight", 0.5));
    ASSIGN_OR_RETURN(st.split_tolerance,
                     PositiveOption(pb.options, "zellige.split_tolerance", 1e-3));
    ASSIGN_OR_RETURN(double total_limit_s,
                     OptionalPositive(pb.options, "zellige.total_time_limit_s"));
    ASSIGN_OR_RETURN(int min_cell, PowerOfTwoOption(pb.options, "zellige.cell_ranks", 16));
    ASSIGN_OR_RETURN(double threads, PositiveOption(pb.options, "zellige.threads", 2));
    const auto reuse = pb.options.find("zellige.reuse_cells");
    if (reuse != pb.options.end() && reuse->second != "on" && reuse->second != "off") {
      return core::InvalidArgument("zellige.reuse_cells: got '" + reuse->second +
                                   "', must be on or off");
    }
    const CostModel& cost = pb.cost;
    const int n = cost.cluster().num_ranks();
    const double cap = cost.MemoryCapacityBytes();
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (total_limit_s > 0) {
      deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(total_limit_s));
      st.time_limit_s = std::min(st.time_limit_s, total_limit_s);
      st.split_time_limit_s = std::min(st.split_time_limit_s, total_limit_s / 4);
    }
    TwoStageInput in;
    in.num_ranks = n;
    in.mem_cap_bytes = cap;
    in.groups = GroupSequences(pb.batch, cost);
    for (const auto& g : in.groups) in.options.push_back(GroupOptions(g.tokens, cost, cap));
    in.settings = st;
    in.deadline = deadline;
    int cell = n > kFlatMaxRanks ? ChooseCellRanks(in.groups, in.options, n, min_cell) : n;
    const double catalog_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    core::StatusOr<TwoStageResult> planned = core::Internal("not planned");
    if (cell < n) {
      CellPlanSettings cs;
      cs.min_cell_ranks = min_cell;
      cs.threads = std::clamp(static_cast<int>(threads), 1, 64);
      cs.ecf = st;
      cs.deadline = deadline;
      cs.progress = pb.progress;
      cs.reuse_identical_cells = reuse == pb.options.end() || reuse->second == "on";
      planned = PlanInCells(in.groups, in.options, n, cell, cap, cs);
      // A cell can lack the memory the whole cluster has: then plan flat.
      if (!planned.ok() && planned.status().code() != core::StatusCode::kInternal) cell = n;
    }
    if (cell == n) {
      for (size_t g = 0; g < in.groups.size(); ++g) {
        if (in.options[g].empty()) {
          return core::Infeasible("planning failed: sequences of " +
                                  std::to_string(in.groups[g].tokens) +
                                  " tokens fit no rank's memory under any config");
        }
      }
      planned = PlanTwoStage(in);
    }
    if (!planned.ok()) return planned.status();
    Plan plan{"zellige", n, std::move(planned->placements), 0};
    plan.stats = planned->stats;
    plan.stats.catalog_ms += catalog_ms;
    if (deadline && std::chrono::steady_clock::now() > *deadline) plan.stats.deadline_hit = true;
    plan.solver_gap = cell < n ? std::max(0.0, plan.stats.Gap()) : planned->solver_gap;
    return plan;
  }

 private:
  // Clusters up to this size are planned flat (one ECF over all ranks).
  static constexpr int kFlatMaxRanks = 32;
};

class JointPlanner : public Planner {
 public:
  explicit JointPlanner(bool binary) : binary_(binary) {}
  core::StatusOr<Plan> MakePlan(const PlanningProblem& pb) const override {
    const auto t0 = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(double limit,
                     PositiveOption(pb.options, "joint.time_limit_s", kJointTimeLimitS));
    ASSIGN_OR_RETURN(double gap, PositiveOption(pb.options, "joint.gap", 1e-6));
    const std::string name = binary_ ? "joint-binary" : "joint";
    std::vector<SeqGroup> groups = GroupSequences(pb.batch, pb.cost);
    EcfSettings st;
    // One budget for the whole plan: the makespan solve gets three quarters of it, the
    // split-minimising solve what is left (EcfSettings::deadline).
    st.time_limit_s = 0.75 * limit;
    st.relative_gap = gap;
    st.split_time_limit_s = limit;
    st.deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(limit));
    if (pb.solver_progress) {
      st.progress = [&pb, &name, t0, limit](const char* stage, const solver::SolveProgress& p) {
        const double elapsed_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        pb.solver_progress({name, stage, elapsed_s, limit, p});
      };
    }
    ASSIGN_OR_RETURN(ExactPlacement exact, PlanGroupsExactly(groups, pb.cost, st, 0, 0, binary_));
    Plan plan{name, pb.cost.cluster().num_ranks(), {}, exact.result.gap};
    AppendPlacements(groups, exact, &plan);
    const EcfResult& r = exact.result;
    plan.stats.model_ms = r.build_ms;
    plan.stats.cbc_ms = r.cbc_ms;
    plan.stats.split_search_ms = r.split_search_ms;
    plan.stats.lower_bound_s = r.lower_bound_s;
    plan.stats.max_rank_load_s = MaxRankLoad(plan, pb.batch, pb.cost);
    plan.stats.time_limit_s = limit;
    // Not proven within the requested gap: the makespan solve stopped on its time limit.
    plan.stats.deadline_hit = !r.proven_optimal || std::chrono::steady_clock::now() - t0 >
                                                       std::chrono::duration<double>(limit);
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
  return {{"joint.time_limit_s",
           "seconds for the whole joint plan, both CBC solves (default 60); when hit, the best "
           "plan so far and its gap"},
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
            "CBC's part of the split-minimising solve, seconds (default none: the "
            "combinatorial split search only)"},
           {"zellige.split_tolerance",
            "loads may exceed the makespan by this fraction to save splits (default 1e-3)"},
           {"zellige.split_bytes_weight",
            "weight of bytes / bound against splits in the second objective (default 0.5)"},
           {"zellige.total_time_limit_s",
            "budget for the whole planner, seconds (default none); when hit, the best plan "
            "so far and its gap over the bound"},
           {"zellige.cell_ranks",
            "above 32 ranks, plan cells of at least this many ranks (power of two, default 16)"},
           {"zellige.threads", "threads planning cells (default 2)"},
           {"zellige.reuse_cells",
            "on: cells dealt the same sequences share one plan (default); off: each planned"}}};
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
