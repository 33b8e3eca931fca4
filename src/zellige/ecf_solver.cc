#include "zellige/ecf_solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include "core/log.h"
#include "core/units.h"
#include "solver/cbc_solver.h"
#include "solver/milp_model.h"
#include "zellige/split_search.h"

namespace tessera::zellige {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct VarInfo {
  int group;  // index into the (possibly expanded) groups
  int option;
  int block;  // index into blocks
};

bool Inside(const RankBlock& b, const RankBlock& c) {
  return b.first >= c.first && b.first + b.size <= c.first + c.size;
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
          double mx = 0, mem_mx = 0;
          for (int r = blocks[b].first; r < blocks[b].first + blocks[b].size; ++r) {
            mx = std::max(mx, out->load[r]);
            mem_mx = std::max(mem_mx, out->mem[r]);
          }
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
      for (int r = b.first; r < b.first + b.size; ++r) {
        out->load[r] += o.time_s;
        out->mem[r] += o.mem_bytes;
      }
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

}  // namespace

core::StatusOr<EcfResult> SolveEcf(const EcfProblem& pb_in, const EcfSettings& st) {
  auto t_start = std::chrono::steady_clock::now();
  const bool debug = core::LogEnabled(core::LogLevel::kDebug);
  const int n = pb_in.num_ranks;
  // Expand to one group per sequence for the binary formulation.
  std::vector<SeqGroup> groups;
  std::vector<std::vector<GroupOption>> options;
  std::vector<int> orig_group;
  for (size_t g = 0; g < pb_in.groups.size(); ++g) {
    if (pb_in.options[g].empty()) {
      return core::Infeasible("planning failed: sequences of " +
                              std::to_string(pb_in.groups[g].tokens) +
                              " tokens fit no rank's memory under any config");
    }
    if (pb_in.one_var_per_sequence) {
      for (int s : pb_in.groups[g].seqs) {
        SeqGroup one = pb_in.groups[g];
        one.seqs = {s};
        groups.push_back(one);
        options.push_back(pb_in.options[g]);
        orig_group.push_back(static_cast<int>(g));
      }
    } else {
      groups.push_back(pb_in.groups[g]);
      options.push_back(pb_in.options[g]);
      orig_group.push_back(static_cast<int>(g));
    }
  }
  const std::vector<RankBlock> blocks = AlignedBlocks(n);
  const double cap = pb_in.mem_cap_bytes;
  const double fluid = pb_in.fluid_time_s;
  const double rho = fluid > 0 ? pb_in.fluid_mem_bytes / fluid : 0.0;
  const double split_slack = st.minimize_splits ? 1 + st.split_tolerance : 1.0;

  // Greedy warm start and the upper bound it proves.
  double ub = kInf;
  if (debug) {
    TLOG(kDebug, "ecf: fluid {:.2f} s, {:.2f} GB, cap {:.2f} GB", fluid,
         pb_in.fluid_mem_bytes / core::kGB, cap / core::kGB);
    for (size_t g = 0; g < groups.size() && !pb_in.one_var_per_sequence; ++g) {
      TLOG(kDebug, "ecf: group {}: {} tokens x {}", g, (long long)groups[g].tokens,
           groups[g].seqs.size());
      for (const auto& o : options[g])
        TLOG(kDebug, "    {} deg {} time {:.2f} mem {:.2f} GB bytes {:.1f} GB",
             o.config.ToString().c_str(), o.degree, o.time_s, o.mem_bytes / core::kGB,
             o.comm_bytes / core::kGB);
    }
  }
  // Secondary objective of the lexicographic solve: splits + 0.5 x bytes / bytes_scale.
  SplitSearchSpace space;
  space.num_ranks = n;
  space.blocks = blocks;
  space.options = options;
  for (const auto& g : groups) space.group_sizes.push_back(static_cast<int>(g.seqs.size()));
  space.mem_cap_bytes = cap;
  space.fluid_time_s = fluid;
  space.fluid_mem_per_s = rho;
  space.bytes_scale = BytesScale(options, space.group_sizes);
  space.bytes_weight = st.split_bytes_weight;
  auto secondary = [&](const GroupOption& o) {
    return SplitCost(o, space.bytes_scale, space.bytes_weight);
  };
  struct Candidate {
    std::vector<GreedyPick> picks;
    std::vector<double> fluid;
    double t = kInf;
    double second = kInf;
  };
  Candidate best, refined;
  // Completes a candidate from its picks: fluid water-filled under the memory caps, T and
  // the secondary cost (T infinite when the fluid does not fit).
  auto complete = [&](std::vector<GreedyPick> picks) {
    Candidate c;
    c.picks = std::move(picks);
    std::vector<double> load(n, 0.0), mem(n, 0.0);
    c.second = 0;
    for (const auto& pk : c.picks) {
      const GroupOption& o = options[pk.group][pk.option];
      const RankBlock& b = blocks[pk.block];
      for (int r = b.first; r < b.first + b.size; ++r) {
        load[r] += o.time_s;
        mem[r] += o.mem_bytes;
      }
      c.second += secondary(o);
    }
    std::vector<double> fcap(n, kInf);
    for (int r = 0; r < n; ++r) {
      if (mem[r] > cap) return c;
      if (rho > 0) fcap[r] = std::max(0.0, (cap - mem[r]) / rho);
    }
    if (!WaterFill(load, fcap, fluid, &c.fluid)) return c;
    c.t = 0;
    for (int r = 0; r < n; ++r) c.t = std::max(c.t, load[r] + c.fluid[r]);
    return c;
  };
  if (st.warm_start) {
    // Targets around the least-work average: every sequence at its least-work option.
    double work = fluid;
    for (size_t g = 0; g < groups.size(); ++g) {
      double w = kInf;
      for (const auto& o : options[g]) w = std::min(w, o.time_s * o.degree);
      work += w * groups[g].seqs.size();
    }
    auto run = [&](double target, double slack) {
      Candidate c;
      Loads l;
      c.picks = GreedyPlacement(groups, options, blocks, n, cap, target, pb_in.fluid_mem_bytes / n,
                                slack, &l);
      if (c.picks.empty()) return c;
      std::vector<double> fcap(n, kInf);
      if (rho > 0)
        for (int r = 0; r < n; ++r) fcap[r] = std::max(0.0, (cap - l.mem[r]) / rho);
      if (!WaterFill(l.load, fcap, fluid, &c.fluid)) {
        c.picks.clear();
        return c;
      }
      c.t = 0;
      for (int r = 0; r < n; ++r) c.t = std::max(c.t, l.load[r] + c.fluid[r]);
      c.second = 0;
      for (const auto& pk : c.picks) c.second += secondary(options[pk.group][pk.option]);
      return c;
    };
    std::vector<Candidate> cands;
    for (double eps : {-1.0, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1}) {
      cands.push_back(run(eps < 0 ? 0.0 : work / n * (1 + eps), 0.0));
      if (!cands.back().picks.empty() && cands.back().t < best.t) best = cands.back();
    }
    for (double slack : {1e-3, 3e-3, 1e-2, 3e-2, 1e-1}) {
      cands.push_back(run(0.0, slack));
      if (!cands.back().picks.empty() && cands.back().t < best.t) best = cands.back();
    }
    if (!best.picks.empty()) {
      ub = best.t;
      // Polish for the second objective (split_search.h) while T <= (1 + tol) T_best.
      const double limit = best.t * split_slack;
      Candidate c = best;
      if (st.minimize_splits) ImproveSplits(space, limit * (1 - 1e-9), &c.picks, 200'000);
      Loads l;
      l.load.assign(n, 0.0);
      l.mem.assign(n, 0.0);
      for (const auto& pk : c.picks) {
        const GroupOption& o = options[pk.group][pk.option];
        const RankBlock& b = blocks[pk.block];
        for (int r = b.first; r < b.first + b.size; ++r) {
          l.load[r] += o.time_s;
          l.mem[r] += o.mem_bytes;
        }
      }
      auto evaluate = [&](std::vector<double>* f) {
        for (int r = 0; r < n; ++r)
          if (l.mem[r] > cap * (1 + 1e-12)) return kInf;
        std::vector<double> fcap(n, kInf);
        if (rho > 0)
          for (int r = 0; r < n; ++r) fcap[r] = std::max(0.0, (cap - l.mem[r]) / rho);
        if (!WaterFill(l.load, fcap, fluid, f)) return kInf;
        double t = 0;
        for (int r = 0; r < n; ++r) t = std::max(t, l.load[r] + (*f)[r]);
        return t;
      };
      c.t = evaluate(&c.fluid);
      c.second = 0;
      for (const auto& pk : c.picks) c.second += secondary(options[pk.group][pk.option]);
      cands.push_back(c);
      refined = best;
      if (debug) {
        for (const auto& x : cands)
          TLOG(kDebug, "ecf: greedy T {:.4f} second {:.4f}", x.t, x.second);
      }
      for (const auto& x : cands) {
        if (!x.picks.empty() && x.t <= limit && x.second < refined.second) refined = x;
      }
    }
  }
  // An option slower per rank than the upper bound can appear in no better solution.
  std::vector<std::vector<int>> kept(groups.size());  // kept option indices per group
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t j = 0; j < options[g].size(); ++j) {
      if (options[g][j].time_s <= ub * split_slack * (1 + 1e-9))
        kept[g].push_back(static_cast<int>(j));
    }
  }

  // Variables: u[g, j, B] for kept options, fluid f_r, makespan T.
  solver::MilpModel m;
  std::vector<VarInfo> vars;
  std::vector<int> var_index;                           // MILP index of vars[i]
  std::vector<std::vector<int>> var_at(groups.size());  // [g][j * blocks + b] -> var or -1
  for (size_t g = 0; g < groups.size(); ++g) {
    var_at[g].assign(options[g].size() * blocks.size(), -1);
    const double ng = static_cast<double>(groups[g].seqs.size());
    for (int j : kept[g]) {
      for (size_t b = 0; b < blocks.size(); ++b) {
        if (blocks[b].size != options[g][j].degree) continue;
        var_at[g][j * blocks.size() + b] = static_cast<int>(vars.size());
        vars.push_back({static_cast<int>(g), j, static_cast<int>(b)});
        var_index.push_back(m.AddVariable(0, ng, 0, true));
      }
    }
  }
  std::vector<int> f_var;
  if (fluid > 0) {
    for (int r = 0; r < n; ++r) f_var.push_back(m.AddVariable(0, solver::kInfinity, 0, false));
  }
  // Lower bound on T: average work and the heaviest single sequence.
  double total_min_work = fluid, heaviest = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    double min_work = kInf, min_time = kInf;
    for (int j : kept[g]) {
      min_work = std::min(min_work, options[g][j].time_s * options[g][j].degree);
      min_time = std::min(min_time, options[g][j].time_s);
    }
    total_min_work += min_work * groups[g].seqs.size();
    heaviest = std::max(heaviest, min_time);
  }
  const double t_lb = std::max(total_min_work / n, heaviest);
  const int t_var = m.AddVariable(t_lb, solver::kInfinity, 1.0, false);

  // Rows: assignment, load, memory, fluid, symmetry.
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<solver::MilpTerm> row;
    for (int v : var_at[g])
      if (v >= 0) row.push_back({var_index[v], 1.0});
    const double ng = static_cast<double>(groups[g].seqs.size());
    m.AddConstraint(std::move(row), ng, ng);
  }
  std::vector<std::vector<solver::MilpTerm>> load_rows(n), mem_rows(n);
  for (size_t i = 0; i < vars.size(); ++i) {
    const GroupOption& o = options[vars[i].group][vars[i].option];
    const RankBlock& b = blocks[vars[i].block];
    for (int r = b.first; r < b.first + b.size; ++r) {
      load_rows[r].push_back({var_index[i], o.time_s});
      mem_rows[r].push_back({var_index[i], o.mem_bytes});
    }
  }
  for (int r = 0; r < n; ++r) {
    if (fluid > 0) {
      load_rows[r].push_back({f_var[r], 1.0});
      if (rho > 0) mem_rows[r].push_back({f_var[r], rho});
    }
    load_rows[r].push_back({t_var, -1.0});
    m.AddConstraint(std::move(load_rows[r]), -solver::kInfinity, 0.0);
    if (!mem_rows[r].empty()) m.AddConstraint(std::move(mem_rows[r]), -solver::kInfinity, cap);
  }
  if (fluid > 0) {
    std::vector<solver::MilpTerm> row;
    for (int r = 0; r < n; ++r) row.push_back({f_var[r], 1.0});
    m.AddConstraint(std::move(row), fluid, fluid);
  }
  std::vector<RankBlock> parents;
  for (const auto& b : blocks)
    if (b.size >= 2) parents.push_back(b);
  std::stable_sort(parents.begin(), parents.end(),
                   [](const RankBlock& a, const RankBlock& b) { return a.size > b.size; });
  if (st.symmetry_breaking) {
    for (const auto& p : parents) {
      const RankBlock c1{p.first, p.size / 2}, c2{p.first + p.size / 2, p.size / 2};
      std::vector<solver::MilpTerm> row;
      for (size_t i = 0; i < vars.size(); ++i) {
        const RankBlock& b = blocks[vars[i].block];
        const double w = options[vars[i].group][vars[i].option].time_s * b.size;
        if (Inside(b, c1)) row.push_back({var_index[i], w});
        if (Inside(b, c2)) row.push_back({var_index[i], -w});
      }
      if (fluid > 0) {
        for (int r = c1.first; r < c1.first + c1.size; ++r) row.push_back({f_var[r], 1.0});
        for (int r = c2.first; r < c2.first + c2.size; ++r) row.push_back({f_var[r], -1.0});
      }
      if (!row.empty()) m.AddConstraint(std::move(row), 0.0, solver::kInfinity);
    }
  }

  solver::SolveOptions opt;
  opt.time_limit_s = st.time_limit_s;
  opt.preprocess = false;  // see SolveOptions::preprocess
  opt.relative_gap = st.relative_gap;
  if (std::getenv("TESSERA_DEBUG_CBC")) opt.log_level = 1;
  // Canonicalise a candidate for the symmetry rows (top-down, mirror sibling subtrees so
  // that the left child holds at least as much work) and express it as MILP values.
  auto block_index = [&](int first, int size) {
    for (size_t b = 0; b < blocks.size(); ++b)
      if (blocks[b].first == first && blocks[b].size == size) return static_cast<int>(b);
    return -1;
  };
  auto to_values = [&](Candidate c) -> std::optional<std::vector<double>> {
    if (c.picks.empty()) return std::nullopt;
    if (c.fluid.empty()) c.fluid.assign(n, 0.0);
    if (st.symmetry_breaking) {
      for (const auto& p : parents) {
        const RankBlock c1{p.first, p.size / 2}, c2{p.first + p.size / 2, p.size / 2};
        double w1 = 0, w2 = 0;
        for (const auto& pk : c.picks) {
          const RankBlock& b = blocks[pk.block];
          const double w = options[pk.group][pk.option].time_s * b.size;
          if (Inside(b, c1)) w1 += w;
          if (Inside(b, c2)) w2 += w;
        }
        for (int r = 0; r < c1.size; ++r) {
          w1 += c.fluid[c1.first + r];
          w2 += c.fluid[c2.first + r];
        }
        if (w1 >= w2) continue;
        for (auto& pk : c.picks) {
          const RankBlock& b = blocks[pk.block];
          if (Inside(b, c1)) {
            pk.block = block_index(b.first + c1.size, b.size);
          } else if (Inside(b, c2)) {
            pk.block = block_index(b.first - c1.size, b.size);
          }
        }
        for (int r = 0; r < c1.size; ++r) std::swap(c.fluid[c1.first + r], c.fluid[c2.first + r]);
      }
    }
    std::vector<double> ws(m.num_variables(), 0.0);
    std::vector<double> load(n, 0.0);
    for (const auto& pk : c.picks) {
      const int v = var_at[pk.group][pk.option * blocks.size() + pk.block];
      if (v < 0) return std::nullopt;
      ws[var_index[v]] += 1;
      const RankBlock& b = blocks[pk.block];
      for (int r = b.first; r < b.first + b.size; ++r)
        load[r] += options[pk.group][pk.option].time_s;
    }
    double t = t_lb;
    for (int r = 0; r < n; ++r) {
      if (fluid > 0) ws[f_var[r]] = c.fluid[r];
      t = std::max(t, load[r] + c.fluid[r]);
    }
    ws[t_var] = t;
    return ws;
  };
  opt.warm_start = to_values(best);
  const std::optional<std::vector<double>> refined_values = to_values(refined);

  if (debug) {
    std::string what;
    double viol = opt.warm_start ? m.MaxViolation(*opt.warm_start, &what) : -1;
    TLOG(kDebug, "ecf: {} vars, {} rows, lb {:.4f}, warm {:.4f} (violation {:g} {})",
         m.num_variables(), m.num_constraints(), t_lb, ub, viol, what.c_str());
  }
  // CBC does not keep a MIP start as its incumbent after preprocessing, so the warm start
  // is used explicitly: accepted outright when it is within the gap of the lower bound,
  // otherwise passed as an objective cutoff (only strictly better solutions are sought).
  EcfResult res;
  res.variables = m.num_variables();
  std::vector<double> values;
  if (opt.warm_start && (ub - t_lb) <= st.relative_gap * ub) {
    values = *opt.warm_start;
    res.makespan_s = ub;
    res.lower_bound_s = t_lb;
    res.proven_optimal = true;  // within the requested gap
    TLOG(kDebug, "ecf: warm start within gap of the bound, no search");
  } else {
    if (opt.warm_start) opt.objective_cutoff = ub * (1 - 1e-9);
    auto first_or = solver::Solve(m, opt);
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
      res.makespan_s = first.values[t_var];
      res.lower_bound_s = std::max(first.best_bound, t_lb);
      res.proven_optimal = first.status == solver::SolveStatus::kOptimal;
    } else if (opt.warm_start && first.status == solver::SolveStatus::kInfeasible) {
      // Proven: nothing beats the warm start.
      values = *opt.warm_start;
      res.makespan_s = ub;
      res.lower_bound_s = ub;
      res.proven_optimal = true;
    } else if (opt.warm_start) {
      // Time limit without a better solution.
      values = *opt.warm_start;
      res.makespan_s = ub;
      res.lower_bound_s = std::isfinite(first.best_bound) ? std::max(first.best_bound, t_lb) : t_lb;
      res.lower_bound_s = std::min(res.lower_bound_s, ub);
    } else if (first.status == solver::SolveStatus::kInfeasible) {
      return core::Infeasible("planning failed: no placement fits every rank's memory");
    } else {
      return core::DeadlineExceeded("planning failed: no placement found within " +
                                    std::to_string(st.time_limit_s) + " s");
    }
  }
  res.gap = res.makespan_s > 0
                ? std::max(0.0, (res.makespan_s - res.lower_bound_s) / res.makespan_s)
                : 0.0;

  if (st.minimize_splits) {
    // Second objective: fewest split sequences with T <= (1 + tol) T*; among those, the
    // least attention communication (weighted so that all of it is worth < 1 split).
    solver::MilpModel m2 = m;
    m2.SetObjectiveCoef(t_var, 0.0);
    m2.SetVariableBounds(t_var, t_lb, res.makespan_s * split_slack);
    bool any_split = false;
    for (size_t i = 0; i < vars.size(); ++i) {
      const GroupOption& o = options[vars[i].group][vars[i].option];
      if (o.degree > 1) {
        m2.SetObjectiveCoef(var_index[i], secondary(o));
        any_split = true;
      }
    }
    if (any_split) {
      solver::SolveOptions opt2;
      opt2.time_limit_s = st.split_time_limit_s;
      opt2.relative_gap = 1e-4;
      opt2.preprocess = false;
      if (refined_values && (*refined_values)[t_var] <= res.makespan_s * split_slack &&
          m2.ObjectiveValue(*refined_values) < m2.ObjectiveValue(values)) {
        values = *refined_values;
      }
      // Combinatorial search (split_search.h) from the makespan solution, the polished
      // greedy and low-split greedy placements; the cheapest feasible one warm-starts CBC,
      // which gets what the search left of the split time limit (at least a fifth of it).
      const auto search_start = std::chrono::steady_clock::now();
      const double limit = res.makespan_s * split_slack * (1 - 1e-9);
      std::vector<std::vector<GreedyPick>> starts;
      std::vector<GreedyPick> from_values;
      for (size_t i = 0; i < vars.size(); ++i) {
        const long count = std::lround(values[var_index[i]]);
        for (long c = 0; c < count; ++c)
          from_values.push_back({vars[i].group, vars[i].option, vars[i].block});
      }
      starts.push_back(std::move(from_values));
      if (!refined.picks.empty()) starts.push_back(refined.picks);
      const double fluid_per_rank = fluid / n;
      for (double share : {1.0, 0.5, 0.0}) {
        for (double reserve : {1.0, 0.5}) {
          starts.push_back(LowSplitGreedy(space, limit - share * fluid_per_rank,
                                          reserve * pb_in.fluid_mem_bytes / n));
        }
      }
      starts.push_back(
          PilotSplitGreedy(space, limit, limit - 0.5 * fluid_per_rank, pb_in.fluid_mem_bytes / n));
      // Identical starts (as multisets of picks) are searched once.
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
          const Candidate c = complete(picks);
          TLOG(kDebug, "ecf: split search start T {:.4f} (limit {:.4f}) cost {:.4f}", c.t, limit,
               c.second);
        }
        if (picks.empty() || !RepairLimit(space, limit, &picks)) continue;
        ImproveSplits(space, limit, &picks, 300'000);
        const double cost = TotalSplitCost(space, picks);
        TLOG(kDebug, "ecf: split search start -> {:.4f}", cost);
        if (cost >= searched.second) continue;
        Candidate c = complete(picks);
        if (std::isfinite(c.t)) searched = std::move(c);
      }
      const double search_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - search_start).count();
      opt2.time_limit_s = std::max(0.2 * st.split_time_limit_s, st.split_time_limit_s - search_s);
      TLOG(kDebug, "ecf: split search {:.1f} ms", 1e3 * search_s);
      if (!searched.picks.empty() && searched.t <= res.makespan_s * split_slack) {
        const auto searched_values = to_values(searched);
        if (searched_values && m2.ObjectiveValue(*searched_values) < m2.ObjectiveValue(values))
          values = *searched_values;
      }
      const double warm_obj = m2.ObjectiveValue(values);
      opt2.warm_start = values;
      opt2.objective_cutoff = warm_obj - 1e-7;
      auto second = warm_obj >= 1.0 ? solver::Solve(m2, opt2)
                                    : core::StatusOr<solver::SolveResult>(core::Internal("none"));
      if (debug && second.ok()) {
        TLOG(kDebug, "ecf: second {} obj {:.4f} {:.1f} ms", solver::SolveStatusName(second->status),
             second->objective_value, second->solve_ms);
      }
      if (second.ok() && second->has_solution()) values = second->values;
    }
  }

  // Decode.
  res.load_s.assign(n, 0.0);
  res.mem_bytes.assign(n, 0.0);
  res.fluid_s.assign(n, 0.0);
  for (int r = 0; r < n && fluid > 0; ++r) res.fluid_s[r] = std::max(0.0, values[f_var[r]]);
  for (size_t i = 0; i < vars.size(); ++i) {
    const int count = static_cast<int>(std::lround(values[var_index[i]]));
    if (count <= 0) continue;
    const GroupOption& o = options[vars[i].group][vars[i].option];
    const RankBlock& b = blocks[vars[i].block];
    res.assignments.push_back({orig_group[vars[i].group], vars[i].option, b, count});
    if (o.degree > 1) res.split_sequences += count;
    for (int r = b.first; r < b.first + b.size; ++r) {
      res.load_s[r] += count * o.time_s;
      res.mem_bytes[r] += count * o.mem_bytes;
    }
  }
  res.solve_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count();
  return res;
}

}  // namespace tessera::zellige
