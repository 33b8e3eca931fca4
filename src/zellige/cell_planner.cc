#include "zellige/cell_planner.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <queue>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/infinity.h"
#include "core/log.h"

namespace tessera::zellige {
namespace {

using Clock = std::chrono::steady_clock;
using core::kInf;

// The least time x degree and the least time over the options of degree <= max_degree.
std::pair<double, double> LeastWorkAndTime(const std::vector<GroupOption>& options,
                                           int max_degree) {
  double work = kInf, time = kInf;
  for (const auto& o : options) {
    if (o.degree > max_degree) continue;
    work = std::min(work, o.time_s * o.degree);
    time = std::min(time, o.time_s);
  }
  return {work, time};
}

// What identifies a cell's subproblem: (tokens, count) per group, in group order.
using CellKey = std::vector<std::pair<int64_t, size_t>>;
CellKey KeyOf(const std::vector<SeqGroup>& groups) {
  CellKey key;
  for (const auto& g : groups) key.emplace_back(g.tokens, g.seqs.size());
  return key;
}

// The plan of cell `to`, from the plan of a cell with the same key (`from`): each sequence
// replaced by the one at the same position of the same group, ranks shifted by `shift`.
std::vector<Placement> ReusePlan(const std::vector<Placement>& plan,
                                 const std::vector<SeqGroup>& from, const std::vector<SeqGroup>& to,
                                 int shift) {
  std::unordered_map<int, int> seq_to;
  for (size_t g = 0; g < from.size(); ++g)
    for (size_t i = 0; i < from[g].seqs.size(); ++i) seq_to[from[g].seqs[i]] = to[g].seqs[i];
  std::vector<Placement> out = plan;
  for (Placement& p : out) {
    p.seq = seq_to.at(p.seq);
    for (int& r : p.ranks) r += shift;
  }
  return out;
}

}  // namespace

int ChooseCellRanks(const std::vector<SeqGroup>& groups,
                    const std::vector<std::vector<GroupOption>>& options, int num_ranks,
                    int min_cell_ranks) {
  double work = 0;
  for (size_t g = 0; g < groups.size(); ++g)
    work += LeastWorkAndTime(options[g], num_ranks).first * groups[g].seqs.size();
  const double avg = work / num_ranks;
  for (int c = std::max(1, min_cell_ranks); 2 * c <= num_ranks; c *= 2) {
    if (num_ranks % c != 0) break;
    bool fits = true;
    for (size_t g = 0; g < groups.size() && fits; ++g)
      fits = LeastWorkAndTime(options[g], c).second <= 0.5 * avg;
    if (fits) return c;
  }
  return num_ranks;
}

std::vector<std::vector<SeqGroup>> DealToCells(const std::vector<SeqGroup>& groups,
                                               const std::vector<std::vector<GroupOption>>& options,
                                               int cells, int cell_ranks) {
  // Longest processing time first: sequences heaviest group first, each to the cell with the
  // least work so far (ties: fewer tokens, then the lower cell).
  using Load = std::tuple<double, double, int>;  // work, tokens, cell
  std::priority_queue<Load, std::vector<Load>, std::greater<>> least;
  for (int c = 0; c < cells; ++c) least.emplace(0.0, 0.0, c);
  std::vector<std::vector<SeqGroup>> out(cells);
  for (size_t g = 0; g < groups.size(); ++g) {
    const double w = LeastWorkAndTime(options[g], cell_ranks).first;
    for (int c = 0; c < cells; ++c) {
      out[c].push_back(groups[g]);
      out[c].back().seqs.clear();
    }
    for (int seq : groups[g].seqs) {
      auto [work, tokens, c] = least.top();
      least.pop();
      out[c].back().seqs.push_back(seq);
      least.emplace(work + w, tokens + static_cast<double>(groups[g].tokens), c);
    }
  }
  for (auto& cell : out) {
    std::erase_if(cell, [](const SeqGroup& g) { return g.seqs.empty(); });
  }
  return out;
}

core::StatusOr<TwoStageResult> PlanInCells(const std::vector<SeqGroup>& groups,
                                           const std::vector<std::vector<GroupOption>>& options,
                                           int num_ranks, int cell_ranks, double mem_cap_bytes,
                                           const CellPlanSettings& settings) {
  const auto t0 = Clock::now();
  const int cells = num_ranks / cell_ranks;
  std::map<int64_t, size_t> group_of;
  for (size_t g = 0; g < groups.size(); ++g) group_of[groups[g].tokens] = g;
  const std::vector<std::vector<SeqGroup>> dealt = DealToCells(groups, options, cells, cell_ranks);
  // Representatives: the first cell of every distinct key.
  std::map<CellKey, int> first_of;
  std::vector<int> rep(cells);
  std::vector<int> to_plan;
  for (int c = 0; c < cells; ++c) {
    CellKey key = KeyOf(dealt[c]);
    if (!settings.reuse_identical_cells) key.emplace_back(-1, c);  // unique per cell
    auto [it, inserted] = first_of.emplace(std::move(key), c);
    rep[c] = it->second;
    if (inserted) to_plan.push_back(c);
  }
  TwoStageResult out;
  out.stats.cells = cells;
  out.stats.cell_ranks = cell_ranks;
  out.stats.cells_planned = static_cast<int>(to_plan.size());
  out.stats.catalog_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();

  std::vector<std::optional<core::StatusOr<TwoStageResult>>> planned(cells);
  std::atomic<int> next{0};
  std::atomic<bool> deadline_hit{false};
  std::mutex progress_mutex;
  int done = 0;
  auto worker = [&] {
    for (int i = next++; i < static_cast<int>(to_plan.size()); i = next++) {
      const int c = to_plan[i];
      TwoStageInput in;
      in.num_ranks = cell_ranks;
      in.mem_cap_bytes = mem_cap_bytes;
      in.groups = dealt[c];
      in.settings = settings.ecf;
      in.deadline = settings.deadline;
      for (const SeqGroup& g : in.groups) {
        std::vector<GroupOption> opts;
        for (const auto& o : options[group_of.at(g.tokens)])
          if (o.degree <= cell_ranks) opts.push_back(o);
        in.options.push_back(std::move(opts));
      }
      if (settings.deadline) {
        const double left_s =
            std::chrono::duration<double>(*settings.deadline - Clock::now()).count();
        const int remaining = static_cast<int>(to_plan.size()) - i;
        const double share_s = left_s * std::max(1, settings.threads) / std::max(1, remaining);
        if (left_s <= 0) {
          deadline_hit = true;
          in.settings.time_limit_s = 1e-3;
          in.settings.minimize_splits = false;
        } else {
          in.settings.time_limit_s = std::min(in.settings.time_limit_s, share_s);
          in.settings.split_time_limit_s = std::min(in.settings.split_time_limit_s, share_s / 4);
        }
      }
      planned[c] = PlanTwoStage(in);
      std::lock_guard<std::mutex> lock(progress_mutex);
      ++done;
      if (settings.progress) settings.progress(done, static_cast<int>(to_plan.size()));
    }
  };
  const int threads =
      std::clamp(settings.threads, 1, std::max(1, static_cast<int>(to_plan.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();

  double max_load = 0;
  for (int c = 0; c < cells; ++c) {
    const core::StatusOr<TwoStageResult>& r = *planned[rep[c]];
    if (!r.ok()) return r.status();
    const int shift = c * cell_ranks;
    const std::vector<Placement> placed =
        rep[c] == c ? ReusePlan(r->placements, dealt[c], dealt[c], shift)
                    : ReusePlan(r->placements, dealt[rep[c]], dealt[c], shift);
    out.placements.insert(out.placements.end(), placed.begin(), placed.end());
    if (rep[c] == c) {
      out.stats.AddStages(r->stats);
      out.solver_gap = std::max(out.solver_gap, r->solver_gap);
    }
    max_load = std::max(max_load, r->max_rank_load_s);
    TLOG(kDebug, "cells: cell {} (plan of {}): {} groups, max load {:.3f} s, bound {:.3f} s", c,
         rep[c], dealt[c].size(), r->max_rank_load_s, r->lower_bound_s);
  }
  out.max_rank_load_s = max_load;
  out.stage1_makespan_s = max_load;
  out.lower_bound_s = std::min(max_load, SimpleLowerBoundS(groups, options, num_ranks));
  out.stats.lower_bound_s = out.lower_bound_s;
  out.stats.max_rank_load_s = max_load;
  out.stats.deadline_hit = deadline_hit;
  return out;
}

}  // namespace tessera::zellige
