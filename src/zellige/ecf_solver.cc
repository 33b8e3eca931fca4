#include "zellige/ecf_solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "core/elapsed.h"
#include "core/infinity.h"
#include "core/log.h"
#include "core/parse_number.h"
#include "core/units.h"
#include "solver/cbc_solver.h"
#include "solver/milp_model.h"
#include "zellige/ecf_model.h"
#include "zellige/split_search.h"

namespace tessera::zellige {
namespace {

using core::kInf;

using Clock = std::chrono::steady_clock;

// Seconds left before `st.deadline` (+inf without one).
double SecondsLeft(const EcfSettings& st) {
  if (!st.deadline) return kInf;
  return std::chrono::duration<double>(*st.deadline - Clock::now()).count();
}

// Hands `st.progress` to a CBC solve as `stage`.
void ReportProgress(const EcfSettings& st, const char* stage, solver::SolveOptions* opt) {
  if (!st.progress) return;
  opt->progress = [&st, stage](const solver::SolveProgress& p) { st.progress(stage, p); };
  opt->progress_interval_s = st.progress_interval_s;
}
struct Loads {
  std::vector<double> load, mem;
};

using GreedyPick = AnchorPick;

// Greedy warm start for a target makespan: every sequence (heaviest group first) takes,
// among the options and blocks that keep the block's maximum load <= target and fit memory,
// and leave each rank its even share of the fluid's memory (`reserve` bytes), the one
// with the least total work (time x degree), then the least communication, then the
// fullest block (best fit). If none stays under the target, the same order among those
// within `slack` of the least maximum load after adding it (slack 0: plain LPT). Returns
// one pick per sequence, or empty when something fits no block's memory.
std::vector<GreedyPick> GreedyPlacement(const std::vector<SeqGroup>& groups,
                                        const std::vector<std::vector<GroupOption>>& options,
                                        const std::vector<RankBlock>& blocks, int n, double cap,
                                        double target, double reserve, double slack, Loads* out) {
  std::vector<GreedyPick> picks;
  out->load.assign(n, 0.0);
  out->mem.assign(n, 0.0);
  struct Cand {
    GreedyPick pick;
    double after, work, bytes, fullness;
    bool fits_target;
  };
  std::vector<Cand> cands;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t copy = 0; copy < groups[g].seqs.size(); ++copy) {
      cands.clear();
      double min_after = kInf;
      for (size_t j = 0; j < options[g].size(); ++j) {
        const GroupOption& o = options[g][j];
        for (size_t b = 0; b < blocks.size(); ++b) {
          if (blocks[b].size != o.degree) continue;
          const double mx = MaxOverBlock(out->load, blocks[b]);
          const double mem_mx = MaxOverBlock(out->mem, blocks[b]);
          if (mem_mx + o.mem_bytes > cap) continue;
          const double after = mx + o.time_s;
          const bool fits = after <= target && mem_mx + o.mem_bytes + reserve <= cap;
          cands.push_back({{static_cast<int>(g), static_cast<int>(j), static_cast<int>(b)},
                           after,
                           o.time_s * o.degree,
                           o.comm_bytes * o.degree,
                           mx,
                           fits});
          min_after = std::min(min_after, after);
        }
      }
      if (cands.empty()) return {};
      // Within the target (or, if nothing fits it, within `slack` of the least load after
      // adding): least work, then least communication, then the fullest block.
      bool any_fit = false;
      for (const auto& c : cands) any_fit |= c.fits_target;
      const Cand* best = nullptr;
      for (const auto& c : cands) {
        if (any_fit ? !c.fits_target : c.after > min_after * (1 + slack)) continue;
        if (!best || c.work < best->work * (1 - 1e-12) ||
            (c.work <= best->work * (1 + 1e-12) &&
             (c.bytes < best->bytes * (1 - 1e-12) ||
              (c.bytes <= best->bytes * (1 + 1e-12) &&
               (any_fit ? c.fullness > best->fullness : c.after < best->after))))) {
          best = &c;
        }
      }
      picks.push_back(best->pick);
      const GroupOption& o = options[g][best->pick.option];
      const RankBlock& b = blocks[best->pick.block];
      AddToBlock(b, o.time_s, &out->load);
      AddToBlock(b, o.mem_bytes, &out->mem);
    }
  }
  return picks;
}

// Water-fills `fluid` seconds of work over ranks (rank r takes at most fcap[r]) so that
// max(load + f) is minimal. Returns false if the caps cannot absorb it.
bool WaterFill(const std::vector<double>& load, const std::vector<double>& fcap, double fluid,
               std::vector<double>* f) {
  const int n = static_cast<int>(load.size());
  f->assign(n, 0.0);
  if (fluid <= 0) return true;
  double total_cap = 0;
  for (double c : fcap) total_cap += c;
  if (total_cap < fluid * (1 + 1e-9)) return false;
  double lo = *std::min_element(load.begin(), load.end());
  double hi = *std::max_element(load.begin(), load.end()) + fluid;
  auto fill = [&](double tau) {
    double s = 0;
    for (int r = 0; r < n; ++r) s += std::clamp(tau - load[r], 0.0, fcap[r]);
    return s;
  };
  for (int it = 0; it < 200 && fill(hi) < fluid; ++it) hi *= 2;
  for (int it = 0; it < 100; ++it) {
    double mid = 0.5 * (lo + hi);
    (fill(mid) < fluid ? lo : hi) = mid;
  }
  double s = 0;
  for (int r = 0; r < n; ++r) s += ((*f)[r] = std::clamp(hi - load[r], 0.0, fcap[r]));
  // Scale down the tiny excess from bisection so the fluid row holds exactly.
  if (s > 0) {
    for (double& x : *f) x *= fluid / s;
  }
  return true;
}

// The problem after grouping: one group per sequence for the joint-binary formulation.
core::StatusOr<EcfInstance> ExpandGroups(const EcfProblem& problem) {
  EcfInstance inst;
  static_cast<EcfProblem&>(inst) = problem;
  inst.groups.clear();
  inst.options.clear();
  for (size_t g = 0; g < problem.groups.size(); ++g) {
    if (problem.options[g].empty()) {
      return core::Infeasible("planning failed: sequences of " +
                              std::to_string(problem.groups[g].tokens) +
                              " tokens fit no rank's memory under any config");
    }
    if (problem.one_var_per_sequence) {
      for (int s : problem.groups[g].seqs) {
        SeqGroup one = problem.groups[g];
        one.seqs = {s};
        inst.groups.push_back(one);
        inst.options.push_back(problem.options[g]);
        inst.orig_group.push_back(static_cast<int>(g));
      }
    } else {
      inst.groups.push_back(problem.groups[g]);
      inst.options.push_back(problem.options[g]);
      inst.orig_group.push_back(static_cast<int>(g));
    }
  }
  inst.blocks = AlignedBlocks(inst.num_ranks);
  inst.fluid_mem_per_s =
      problem.fluid_time_s > 0 ? problem.fluid_mem_bytes / problem.fluid_time_s : 0.0;
  return inst;
}

void LogInstance(const EcfInstance& inst) {
  TLOG(kDebug, "ecf: fluid {:.2f} s, {:.2f} GB, cap {:.2f} GB", inst.fluid_time_s,
       inst.fluid_mem_bytes / core::kGB, inst.mem_cap_bytes / core::kGB);
  for (size_t g = 0; g < inst.groups.size() && !inst.one_var_per_sequence; ++g) {
    TLOG(kDebug, "ecf: group {}: {} tokens x {}", g, (long long)inst.groups[g].tokens,
         inst.groups[g].seqs.size());
    for (const auto& o : inst.options[g])
      TLOG(kDebug, "    {} deg {} time {:.2f} mem {:.2f} GB bytes {:.1f} GB",
           o.config.ToString().c_str(), o.degree, o.time_s, o.mem_bytes / core::kGB,
           o.comm_bytes / core::kGB);
  }
}

// The second objective of the lexicographic solve: splits + weight x bytes / bytes_scale.
SplitSearchSpace MakeSplitSpace(const EcfInstance& inst, const EcfSettings& st) {
  SplitSearchSpace space;
  space.num_ranks = inst.num_ranks;
  space.blocks = inst.blocks;
  space.options = inst.options;
  for (const auto& g : inst.groups) space.group_sizes.push_back(static_cast<int>(g.seqs.size()));
  space.mem_cap_bytes = inst.mem_cap_bytes;
  space.fluid_time_s = inst.fluid_time_s;
  space.fluid_mem_per_s = inst.fluid_mem_per_s;
  space.bytes_scale = BytesScale(inst.options, space.group_sizes);
  space.bytes_weight = st.split_bytes_weight;
  return space;
}

// How far the second solve may raise T over the first's: T <= slack x T*.
double SplitSlack(const EcfSettings& st) {
  return st.minimize_splits ? 1 + st.split_tolerance : 1.0;
}

// A placement, the fluid water-filled over it, its makespan T and secondary cost.
struct Candidate {
  std::vector<GreedyPick> picks;
  std::vector<double> fluid;
  double t = kInf;
  double second = kInf;
};

Loads PlacementLoads(const EcfInstance& inst, const std::vector<GreedyPick>& picks) {
  Loads l;
  l.load.assign(inst.num_ranks, 0.0);
  l.mem.assign(inst.num_ranks, 0.0);
  for (const auto& pk : picks) {
    const GroupOption& o = inst.options[pk.group][pk.option];
    const RankBlock& b = inst.blocks[pk.block];
    AddToBlock(b, o.time_s, &l.load);
    AddToBlock(b, o.mem_bytes, &l.mem);
  }
  return l;
}

// Water-fills the fluid over ranks with loads `l`, each taking what its memory leaves room
// for. Returns T = max(load + fluid), or nullopt when the memory cannot absorb the fluid.
std::optional<double> FillFluid(const EcfInstance& inst, const Loads& l,
                                std::vector<double>* fluid) {
  const int n = inst.num_ranks;
  const double cap = inst.mem_cap_bytes, rho = inst.fluid_mem_per_s;
  std::vector<double> fcap(n, kInf);
  if (rho > 0)
    for (int r = 0; r < n; ++r) fcap[r] = std::max(0.0, (cap - l.mem[r]) / rho);
  if (!WaterFill(l.load, fcap, inst.fluid_time_s, fluid)) return std::nullopt;
  double t = 0;
  for (int r = 0; r < n; ++r) t = std::max(t, l.load[r] + (*fluid)[r]);
  return t;
}

// Completes a candidate from its picks: the fluid, T and the secondary cost (T infinite when
// a rank's memory exceeds the capacity x (1 + mem_tolerance) or the fluid does not fit).
Candidate CompleteCandidate(const EcfInstance& inst, const SplitSearchSpace& space,
                            std::vector<GreedyPick> picks, double mem_tolerance) {
  Candidate c;
  c.picks = std::move(picks);
  c.second = TotalSplitCost(space, c.picks);
  const Loads l = PlacementLoads(inst, c.picks);
  for (int r = 0; r < inst.num_ranks; ++r)
    if (l.mem[r] > inst.mem_cap_bytes * (1 + mem_tolerance)) return c;
  if (const std::optional<double> t = FillFluid(inst, l, &c.fluid)) c.t = *t;
  return c;
}

// GreedyPlacement for a target makespan and slack, completed; no picks when it fails.
Candidate GreedyCandidate(const EcfInstance& inst, const SplitSearchSpace& space, double target,
                          double slack, double reserve_bytes) {
  Candidate c;
  Loads l;
  c.picks = GreedyPlacement(inst.groups, inst.options, inst.blocks, inst.num_ranks,
                            inst.mem_cap_bytes, target, reserve_bytes, slack, &l);
  if (c.picks.empty()) return c;
  const std::optional<double> t = FillFluid(inst, l, &c.fluid);
  if (!t) {
    c.picks.clear();
    return c;
  }
  c.t = *t;
  c.second = TotalSplitCost(space, c.picks);
  return c;
}

struct WarmStarts {
  Candidate best;     // least T; no picks when no greedy placement fits
  Candidate refined;  // least secondary cost with T <= SplitSlack x best.t
};

// Greedy placements for targets around the least-work average (every sequence at its
// least-work option) and for slacks over plain LPT; the best one polished for the second
// objective (split_search.h).
WarmStarts GreedyWarmStarts(const EcfInstance& inst, const SplitSearchSpace& space,
                            const EcfSettings& st, double reserve_bytes, bool debug) {
  const int n = inst.num_ranks;
  double work = inst.fluid_time_s;
  for (size_t g = 0; g < inst.groups.size(); ++g) {
    double w = kInf;
    for (const auto& o : inst.options[g]) w = std::min(w, o.time_s * o.degree);
    work += w * inst.groups[g].seqs.size();
  }
  WarmStarts warm;
  std::vector<Candidate> cands;
  for (double eps : {-1.0, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1}) {
    cands.push_back(
        GreedyCandidate(inst, space, eps < 0 ? 0.0 : work / n * (1 + eps), 0.0, reserve_bytes));
    if (!cands.back().picks.empty() && cands.back().t < warm.best.t) warm.best = cands.back();
  }
  for (double slack : {1e-3, 3e-3, 1e-2, 3e-2, 1e-1}) {
    cands.push_back(GreedyCandidate(inst, space, 0.0, slack, reserve_bytes));
    if (!cands.back().picks.empty() && cands.back().t < warm.best.t) warm.best = cands.back();
  }
  if (warm.best.picks.empty()) return warm;
  // Polish for the second objective while T <= (1 + tol) T_best.
  const double limit = warm.best.t * SplitSlack(st);
  std::vector<GreedyPick> picks = warm.best.picks;
  if (st.minimize_splits) ImproveSplits(space, limit * (1 - 1e-9), &picks, 200'000);
  cands.push_back(CompleteCandidate(inst, space, std::move(picks), 1e-12));
  warm.refined = warm.best;
  if (debug) {
    for (const auto& x : cands) TLOG(kDebug, "ecf: greedy T {:.4f} second {:.4f}", x.t, x.second);
  }
  for (const auto& x : cands) {
    if (!x.picks.empty() && x.t <= limit && x.second < warm.refined.second) warm.refined = x;
  }
  return warm;
}

// The makespan solve. CBC does not keep a MIP start as its incumbent after preprocessing, so
// the warm start (T = ub) is used explicitly: accepted outright when it is within the gap of
// the lower bound, otherwise passed as an objective cutoff (only strictly better solutions
// are sought). Sets the makespan, bound, gap and optimality of `res`; returns the values.
core::StatusOr<std::vector<double>> SolveMakespan(const EcfModel& model, const EcfSettings& st,
                                                  std::optional<std::vector<double>> warm,
                                                  double ub, bool debug, EcfResult* res) {
  const double t_lb = model.t_lb;
  solver::SolveOptions opt;
  opt.time_limit_s = std::min(st.time_limit_s, std::max(SecondsLeft(st), 1e-3));
  opt.preprocess = false;  // see SolveOptions::preprocess
  ReportProgress(st, "makespan", &opt);
  opt.relative_gap = st.relative_gap;
  if (std::getenv("TESSERA_DEBUG_CBC")) opt.log_level = 1;
  opt.warm_start = std::move(warm);
  if (debug) {
    std::string what;
    double viol = opt.warm_start ? model.milp.MaxViolation(*opt.warm_start, &what) : -1;
    TLOG(kDebug, "ecf: {} vars, {} rows, lb {:.4f}, warm {:.4f} (violation {:g} {})",
         model.milp.num_variables(), model.milp.num_constraints(), t_lb, ub, viol, what.c_str());
  }
  std::vector<double> values;
  if (opt.warm_start && (ub - t_lb) <= st.relative_gap * ub) {
    values = *opt.warm_start;
    res->makespan_s = ub;
    res->lower_bound_s = t_lb;
    res->proven_optimal = true;  // within the requested gap
    TLOG(kDebug, "ecf: warm start within gap of the bound, no search");
  } else {
    if (opt.warm_start) opt.objective_cutoff = ub * (1 - 1e-9);
    auto first_or = solver::Solve(model.milp, opt);
    if (!first_or.ok() && !opt.warm_start) return first_or.status();
    // CBC 2.10 occasionally returns a solution that violates the model (the solver layer
    // reports it as Internal); the warm start is then kept, with the bound from the LP.
    solver::SolveResult first;
    if (first_or.ok()) {
      first = std::move(first_or).value();
    } else {
      TLOG(kDebug, "ecf: solve failed: {}", first_or.status().ToString().c_str());
      first.status = solver::SolveStatus::kNoSolutionFound;
      first.best_bound = t_lb;
    }
    if (debug) {
      TLOG(kDebug, "ecf: first {} obj {:.6f} bound {:.6f} {:.1f} ms nodes {}",
           solver::SolveStatusName(first.status), first.objective_value, first.best_bound,
           first.solve_ms, static_cast<long long>(first.node_count));
    }
    if (first.has_solution()) {
      values = first.values;
      res->makespan_s = first.values[model.t_var];
      res->lower_bound_s = std::max(first.best_bound, t_lb);
      res->proven_optimal = first.status == solver::SolveStatus::kOptimal;
    } else if (opt.warm_start && first.status == solver::SolveStatus::kInfeasible) {
      // Proven: nothing beats the warm start.
      values = *opt.warm_start;
      res->makespan_s = ub;
      res->lower_bound_s = ub;
      res->proven_optimal = true;
    } else if (opt.warm_start) {
      // Time limit without a better solution.
      values = *opt.warm_start;
      res->makespan_s = ub;
      res->lower_bound_s =
          std::isfinite(first.best_bound) ? std::max(first.best_bound, t_lb) : t_lb;
      res->lower_bound_s = std::min(res->lower_bound_s, ub);
    } else if (first.status == solver::SolveStatus::kInfeasible) {
      return core::Infeasible("planning failed: no placement fits every rank's memory");
    } else {
      return core::DeadlineExceeded("planning failed: no placement found within " +
                                    core::ShowNumber(opt.time_limit_s) + " s");
    }
  }
  res->gap = res->makespan_s > 0
                 ? std::max(0.0, (res->makespan_s - res->lower_bound_s) / res->makespan_s)
                 : 0.0;
  return values;
}

// One pick per sequence from MILP values.
std::vector<GreedyPick> PicksOfValues(const EcfModel& model, const std::vector<double>& values) {
  std::vector<GreedyPick> picks;
  for (size_t i = 0; i < model.vars.size(); ++i) {
    const long count = std::lround(values[model.var_index[i]]);
    for (long c = 0; c < count; ++c)
      picks.push_back({model.vars[i].group, model.vars[i].option, model.vars[i].block});
  }
  return picks;
}

// Starts of the split search: the makespan solution, the polished greedy placement and
// low-split greedy placements for a few fluid shares and memory reserves.
std::vector<std::vector<GreedyPick>> SplitSearchStarts(const SplitSearchSpace& space,
                                                       const EcfModel& model,
                                                       const std::vector<double>& values,
                                                       const Candidate& refined, double limit,
                                                       double fluid_mem_bytes) {
  std::vector<std::vector<GreedyPick>> starts;
  starts.push_back(PicksOfValues(model, values));
  if (!refined.picks.empty()) starts.push_back(refined.picks);
  const double fluid_per_rank = space.fluid_time_s / space.num_ranks;
  for (double share : {1.0, 0.5, 0.0}) {
    for (double reserve : {1.0, 0.5}) {
      starts.push_back(LowSplitGreedy(space, limit - share * fluid_per_rank,
                                      reserve * fluid_mem_bytes / space.num_ranks));
    }
  }
  starts.push_back(PilotSplitGreedy(space, limit, limit - 0.5 * fluid_per_rank,
                                    fluid_mem_bytes / space.num_ranks));
  return starts;
}

// The cheapest feasible placement (under `limit`) that repair and local search
// (split_search.h) reach from the starts; identical starts (as multisets of picks) are
// searched once. No picks when none is feasible.
Candidate SearchSplits(const EcfInstance& inst, const SplitSearchSpace& space,
                       std::vector<std::vector<GreedyPick>> starts, double limit, bool debug) {
  auto key = [](std::vector<GreedyPick> p) {
    std::sort(p.begin(), p.end(), [](const GreedyPick& a, const GreedyPick& b) {
      return std::tie(a.group, a.option, a.block) < std::tie(b.group, b.option, b.block);
    });
    std::vector<int> k;
    for (const auto& x : p) k.insert(k.end(), {x.group, x.option, x.block});
    return k;
  };
  std::vector<std::vector<int>> seen;
  Candidate searched;
  for (auto& picks : starts) {
    if (picks.empty()) continue;
    std::vector<int> k = key(picks);
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
    seen.push_back(std::move(k));
    if (debug && !picks.empty()) {
      const Candidate c = CompleteCandidate(inst, space, picks, 0.0);
      TLOG(kDebug, "ecf: split search start T {:.4f} (limit {:.4f}) cost {:.4f}", c.t, limit,
           c.second);
    }
    if (picks.empty() || !RepairLimit(space, limit, &picks)) continue;
    ImproveSplits(space, limit, &picks, 300'000);
    const double cost = TotalSplitCost(space, picks);
    TLOG(kDebug, "ecf: split search start -> {:.4f}", cost);
    if (cost >= searched.second) continue;
    Candidate c = CompleteCandidate(inst, space, picks, 0.0);
    if (std::isfinite(c.t)) searched = std::move(c);
  }
  return searched;
}

// Second objective: fewest split sequences with T <= (1 + tol) T*; among those, the least
// attention communication (weighted so that all of it is worth < 1 split). The cheapest of
// `values`, the refined greedy placement and the split search's result warm-starts CBC,
// which gets what the search left of the split time limit (at least a fifth of it).
// Replaces `values` by the best solution found.
void MinimiseSplits(const EcfInstance& inst, const SplitSearchSpace& space, const EcfModel& model,
                    const EcfSettings& st, const Candidate& refined, double makespan_s, bool debug,
                    std::vector<double>* values, EcfResult* res) {
  const double split_slack = SplitSlack(st);
  solver::MilpModel m2 = model.milp;
  m2.SetObjectiveCoef(model.t_var, 0.0);
  m2.SetVariableBounds(model.t_var, model.t_lb, makespan_s * split_slack);
  bool any_split = false;
  for (size_t i = 0; i < model.vars.size(); ++i) {
    const GroupOption& o = inst.options[model.vars[i].group][model.vars[i].option];
    if (o.degree > 1) {
      m2.SetObjectiveCoef(model.var_index[i], SplitCost(o, space.bytes_scale, space.bytes_weight));
      any_split = true;
    }
  }
  if (!any_split) return;
  solver::SolveOptions opt2;
  opt2.time_limit_s = st.split_time_limit_s;
  opt2.relative_gap = 1e-4;
  opt2.preprocess = false;
  const std::optional<std::vector<double>> refined_values =
      PlacementValues(inst, model, st.symmetry_breaking, refined.picks, refined.fluid);
  if (refined_values && (*refined_values)[model.t_var] <= makespan_s * split_slack &&
      m2.ObjectiveValue(*refined_values) < m2.ObjectiveValue(*values)) {
    *values = *refined_values;
  }
  const auto search_start = std::chrono::steady_clock::now();
  const double limit = makespan_s * split_slack * (1 - 1e-9);
  const Candidate searched = SearchSplits(
      inst, space, SplitSearchStarts(space, model, *values, refined, limit, inst.fluid_mem_bytes),
      limit, debug);
  const double search_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - search_start).count();
  res->split_search_ms += 1e3 * search_s;
  opt2.time_limit_s = std::max(0.2 * st.split_time_limit_s, st.split_time_limit_s - search_s);
  TLOG(kDebug, "ecf: split search {:.1f} ms", 1e3 * search_s);
  if (!searched.picks.empty() && searched.t <= makespan_s * split_slack) {
    const auto searched_values =
        PlacementValues(inst, model, st.symmetry_breaking, searched.picks, searched.fluid);
    if (searched_values && m2.ObjectiveValue(*searched_values) < m2.ObjectiveValue(*values))
      *values = *searched_values;
  }
  const double warm_obj = m2.ObjectiveValue(*values);
  if (st.split_time_limit_s <= 0) return;  // the combinatorial search only
  // Under a deadline the split solve gets what is left of it, and none below 50 ms.
  const double left_s = SecondsLeft(st);
  if (left_s < 0.05) return;
  opt2.time_limit_s = std::min(opt2.time_limit_s, left_s);
  ReportProgress(st, "splits", &opt2);
  opt2.warm_start = *values;
  opt2.objective_cutoff = warm_obj - 1e-7;
  const auto cbc_start = Clock::now();
  auto second = warm_obj >= 1.0 ? solver::Solve(m2, opt2)
                                : core::StatusOr<solver::SolveResult>(core::Internal("none"));
  res->cbc_ms += core::MillisecondsSince(cbc_start);
  if (debug && second.ok()) {
    TLOG(kDebug, "ecf: second {} obj {:.4f} {:.1f} ms", solver::SolveStatusName(second->status),
         second->objective_value, second->solve_ms);
  }
  if (second.ok() && second->has_solution()) *values = second->values;
}

// The assignments, per-rank loads, memory and fluid, and split count of MILP values.
void Decode(const EcfInstance& inst, const EcfModel& model, const std::vector<double>& values,
            EcfResult* res) {
  const int n = inst.num_ranks;
  res->load_s.assign(n, 0.0);
  res->mem_bytes.assign(n, 0.0);
  res->fluid_s.assign(n, 0.0);
  for (int r = 0; r < n && inst.fluid_time_s > 0; ++r)
    res->fluid_s[r] = std::max(0.0, values[model.f_var[r]]);
  for (size_t i = 0; i < model.vars.size(); ++i) {
    const int count = static_cast<int>(std::lround(values[model.var_index[i]]));
    if (count <= 0) continue;
    const EcfVar& v = model.vars[i];
    const GroupOption& o = inst.options[v.group][v.option];
    const RankBlock& b = inst.blocks[v.block];
    res->assignments.push_back({inst.orig_group[v.group], v.option, b, count});
    if (o.degree > 1) res->split_sequences += count;
    AddToBlock(b, count * o.time_s, &res->load_s);
    AddToBlock(b, count * o.mem_bytes, &res->mem_bytes);
  }
}

}  // namespace

core::StatusOr<EcfResult> SolveEcf(const EcfProblem& problem, const EcfSettings& st) {
  const auto t_start = std::chrono::steady_clock::now();
  const bool debug = core::LogEnabled(core::LogLevel::kDebug);
  core::StatusOr<EcfInstance> inst_or = ExpandGroups(problem);
  if (!inst_or.ok()) return inst_or.status();
  const EcfInstance inst = std::move(inst_or).value();
  if (debug) LogInstance(inst);
  const SplitSearchSpace space = MakeSplitSpace(inst, st);
  const double reserve_bytes = inst.fluid_mem_bytes / inst.num_ranks;
  // Greedy warm start and the upper bound it proves.
  WarmStarts warm;
  if (st.warm_start) warm = GreedyWarmStarts(inst, space, st, reserve_bytes, debug);
  const double ub = warm.best.picks.empty() ? kInf : warm.best.t;
  const EcfModel model = BuildEcfModel(inst, ub * SplitSlack(st), st.symmetry_breaking);
  EcfResult res;
  res.variables = model.milp.num_variables();
  res.build_ms = core::MillisecondsSince(t_start);
  const auto cbc_start = Clock::now();
  core::StatusOr<std::vector<double>> values = SolveMakespan(
      model, st,
      PlacementValues(inst, model, st.symmetry_breaking, warm.best.picks, warm.best.fluid), ub,
      debug, &res);
  res.cbc_ms += core::MillisecondsSince(cbc_start);
  if (!values.ok()) return values.status();
  if (st.minimize_splits) {
    MinimiseSplits(inst, space, model, st, warm.refined, res.makespan_s, debug, &*values, &res);
  }
  Decode(inst, model, *values, &res);
  res.solve_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count();
  return res;
}

}  // namespace tessera::zellige
