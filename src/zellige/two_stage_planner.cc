#include "zellige/two_stage_planner.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/elapsed.h"
#include "zellige/filler_packing.h"

namespace tessera::zellige {
namespace {

using Clock = std::chrono::steady_clock;
// Plans with groups[0, k) as anchors.
core::StatusOr<TwoStageResult> PlanWithAnchors(const TwoStageInput& in, int k) {
  TwoStageResult out;
  EcfProblem pb;
  pb.num_ranks = in.num_ranks;
  pb.mem_cap_bytes = in.mem_cap_bytes;
  pb.groups.assign(in.groups.begin(), in.groups.begin() + k);
  pb.options.assign(in.options.begin(), in.options.begin() + k);
  std::vector<FillerItem> items;
  for (size_t g = k; g < in.groups.size(); ++g) {
    for (int s : in.groups[g].seqs) {
      items.push_back({s, in.groups[g].whole_time_s, in.groups[g].whole_mem_bytes});
      pb.fluid_time_s += in.groups[g].whole_time_s;
      pb.fluid_mem_bytes += in.groups[g].whole_mem_bytes;
    }
  }
  ASSIGN_OR_RETURN(EcfResult ecf, SolveEcf(pb, in.settings));
  out.stats.model_ms = ecf.build_ms;
  out.stats.cbc_ms = ecf.cbc_ms;
  out.stats.split_search_ms = ecf.split_search_ms;
  out.stage1_makespan_s = ecf.makespan_s;
  out.lower_bound_s = ecf.lower_bound_s;
  out.solver_gap = ecf.gap;
  std::vector<double> load(in.num_ranks, 0.0);
  std::vector<size_t> next(k, 0);
  for (const auto& a : ecf.assignments) {
    const GroupOption& o = in.options[a.group][a.option];
    for (int c = 0; c < a.count; ++c) {
      const int seq = in.groups[a.group].seqs[next[a.group]++];
      out.placements.push_back({seq, o.config, a.block.Ranks()});
      AddToBlock(a.block, o.time_s, &load);
    }
  }
  const auto t2 = Clock::now();
  std::vector<double> mem = ecf.mem_bytes;
  ASSIGN_OR_RETURN(std::vector<int> rank_of,
                   PackFillers(items, ecf.fluid_s, mem, in.mem_cap_bytes));
  for (size_t i = 0; i < items.size(); ++i) {
    out.placements.push_back({items[i].seq, ParallelConfig{}, {rank_of[i]}});
    load[rank_of[i]] += items[i].time_s;
  }
  out.stats.stage2_ms = core::MillisecondsSince(t2);
  out.max_rank_load_s = *std::max_element(load.begin(), load.end());
  return out;
}

}  // namespace

double SimpleLowerBoundS(const std::vector<SeqGroup>& groups,
                         const std::vector<std::vector<GroupOption>>& options, int num_ranks) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double work = 0, heaviest = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    double min_work = kInf, min_time = kInf;
    for (const auto& o : options[g]) {
      min_work = std::min(min_work, o.time_s * o.degree);
      min_time = std::min(min_time, o.time_s);
    }
    if (options[g].empty()) continue;
    work += min_work * static_cast<double>(groups[g].seqs.size());
    heaviest = std::max(heaviest, min_time);
  }
  return std::max(work / std::max(1, num_ranks), heaviest);
}

core::StatusOr<TwoStageResult> PlanTwoStage(const TwoStageInput& in) {
  const auto t0 = Clock::now();
  const int m = static_cast<int>(in.groups.size());
  int k = CatalogCut(in.groups);
  // Fillers must be small against a rank's load: a filler group whose whole time exceeds
  // 2% of the average per-rank work is promoted to the anchors (small batches).
  double total = 0;
  for (const auto& g : in.groups) total += g.whole_time_s * g.seqs.size();
  const double avg = total / in.num_ranks;
  while (k < m && in.groups[k].whole_time_s > 0.02 * avg) ++k;
  const double cut_ms = core::MillisecondsSince(t0);
  std::optional<TwoStageResult> best;
  PlannerStats stages;
  double bound = SimpleLowerBoundS(in.groups, in.options, in.num_ranks);
  for (int attempt = 0; attempt < 4; ++attempt) {
    ASSIGN_OR_RETURN(TwoStageResult planned, PlanWithAnchors(in, k));
    stages.AddStages(planned.stats);
    bound = std::max(bound, planned.lower_bound_s);
    const bool done = planned.max_rank_load_s <= planned.stage1_makespan_s * (1 + 2e-3) || k >= m;
    if (!best || planned.max_rank_load_s < best->max_rank_load_s) best = std::move(planned);
    if (done || (in.deadline && Clock::now() >= *in.deadline)) break;
    ++k;
  }
  best->stats = stages;
  best->stats.catalog_ms = cut_ms;
  best->lower_bound_s = std::min(bound, best->max_rank_load_s);
  best->stats.lower_bound_s = best->lower_bound_s;
  best->stats.max_rank_load_s = best->max_rank_load_s;
  return std::move(*best);
}

}  // namespace tessera::zellige
