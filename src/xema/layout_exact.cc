// The exact layouts: a MILP over CBC and an exhaustive search (tests).
#include <algorithm>
#include <numeric>

#include "solver/cbc_solver.h"
#include "solver/milp_model.h"
#include "xema/layout_algorithms.h"

namespace tessera::xema::internal {
namespace {

// Moves every instance down as far as the instances below it allow, in order of offset:
// never raises an offset, keeps memory order (so the layout stays valid) and makes every
// offset a sum of sizes (so aligned).
std::vector<int64_t> Compact(const LayoutProblem& p, const std::vector<int64_t>& offsets) {
  std::vector<int> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return offsets[a] < offsets[b]; });
  std::vector<int64_t> out(p.size(), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const int i = order[k];
    int64_t o = 0;
    for (size_t m = 0; m < k; ++m) {
      const int j = order[m];
      if (p.Overlap(i, j)) o = std::max(o, out[j] + p.bytes[j]);
    }
    out[i] = o;
  }
  return out;
}

}  // namespace

core::StatusOr<ExactResult> LayoutMilp(const LayoutProblem& p, double time_limit_s, bool shortcut) {
  // Warm start and big-M from the best greedy layout.
  std::string xla_detail;
  std::vector<std::vector<int64_t>> greedy = {LayoutTflite(p), LayoutTflm(p),
                                              LayoutXla(p, &xla_detail)};
  std::vector<int64_t> start = greedy[0];
  for (const auto& g : greedy)
    if (ArenaOf(p, g) < ArenaOf(p, start)) start = g;
  ExactResult r;
  r.offsets = start;
  const int n = p.size();
  if (n == 0) {
    r.proven_optimal = true;
    return r;
  }
  // Peak live bytes (the largest live set is the live set at some alloc op): no arena is
  // smaller; when the best greedy meets it, it is optimal without a solve.
  int64_t lower_bound = 0;
  {
    std::vector<int> starts(p.start.begin(), p.start.end());
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    for (int t : starts) {
      int64_t sum = 0;
      for (int i = 0; i < n; ++i)
        if (p.start[i] <= t && t <= p.end[i]) sum += p.bytes[i];
      lower_bound = std::max(lower_bound, sum);
    }
  }
  if (shortcut && ArenaOf(p, start) == lower_bound) {
    r.proven_optimal = true;
    r.detail = "milp: greedy meets the lower bound (optimal, no solve)";
    return r;
  }
  // Work in units of kAlignmentBytes so coefficients stay small.
  const double unit = static_cast<double>(kAlignmentBytes);
  const double ub = static_cast<double>(ArenaOf(p, start)) / unit;
  std::vector<double> u(n);
  for (int i = 0; i < n; ++i) u[i] = static_cast<double>(p.bytes[i]) / unit;
  solver::MilpModel m;
  std::vector<int> o(n);
  const int peak = m.AddVariable(static_cast<double>(lower_bound) / unit, ub, 1.0, false, "arena");
  for (int i = 0; i < n; ++i) {
    o[i] = m.AddVariable(0, ub - u[i], 0.0, false, "o" + std::to_string(i));
    m.AddConstraint({{o[i], 1.0}, {peak, -1.0}}, -solver::kInfinity, -u[i]);
  }
  std::vector<double> warm(1 + n, 0.0);
  warm[peak] = ub;
  for (int i = 0; i < n; ++i) warm[o[i]] = static_cast<double>(start[i]) / unit;
  const double big_m = ub;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (!p.Overlap(i, j)) continue;
      // z = 0: i below j; z = 1: j below i.
      const int z = m.AddVariable(0, 1, 0.0, true);
      m.AddConstraint({{o[i], 1.0}, {o[j], -1.0}, {z, -big_m}}, -solver::kInfinity, -u[i]);
      m.AddConstraint({{o[j], 1.0}, {o[i], -1.0}, {z, big_m}}, -solver::kInfinity, big_m - u[j]);
      warm.push_back(start[j] + p.bytes[j] <= start[i] ? 1.0 : 0.0);
    }
  }
  solver::SolveOptions so;
  so.time_limit_s = time_limit_s;
  so.warm_start = warm;
  so.absolute_gap = 0.5;  // the arena is an integer number of units
  // CBC can crash when a very short limit expires inside its preprocessing (cbc_solver.h).
  so.preprocess = time_limit_s >= 1.0;
  ASSIGN_OR_RETURN(solver::SolveResult res, solver::Solve(m, so));
  if (res.has_solution()) {
    std::vector<int64_t> offs(n);
    for (int i = 0; i < n; ++i)
      offs[i] = static_cast<int64_t>(std::llround(res.values[o[i]] * unit));
    std::vector<int64_t> compact = Compact(p, offs);
    if (ArenaOf(p, compact) <= ArenaOf(p, start)) r.offsets = compact;
  }
  r.proven_optimal = res.status == solver::SolveStatus::kOptimal;
  r.detail = std::string("milp: ") + solver::SolveStatusName(res.status) + ", " +
             std::to_string(res.node_count) + " nodes";
  return r;
}

namespace {

struct BruteSearch {
  const LayoutProblem& p;
  std::vector<int64_t> offsets, best_offsets;
  std::vector<bool> used;
  std::vector<int> placed;
  int64_t best = INT64_MAX;

  void Dfs(int64_t top) {
    if (top >= best) return;
    if (static_cast<int>(placed.size()) == p.size()) {
      best = top;
      best_offsets = offsets;
      return;
    }
    for (int i = 0; i < p.size(); ++i) {
      if (used[i]) continue;
      int64_t o = 0;
      for (int j : placed)
        if (p.Overlap(i, j)) o = std::max(o, offsets[j] + p.bytes[j]);
      used[i] = true;
      placed.push_back(i);
      offsets[i] = o;
      Dfs(std::max(top, o + p.bytes[i]));
      placed.pop_back();
      used[i] = false;
    }
  }
};

}  // namespace

ExactResult LayoutBrute(const LayoutProblem& p) {
  BruteSearch s{p, std::vector<int64_t>(p.size(), 0), {}, std::vector<bool>(p.size(), false), {}};
  s.best_offsets = LayoutTflite(p);
  s.best = ArenaOf(p, s.best_offsets) + 1;  // strictly better or equal to greedy is searched
  s.Dfs(0);
  ExactResult r;
  r.offsets = s.best_offsets;
  r.proven_optimal = true;
  r.detail = "brute: exhaustive";
  return r;
}

}  // namespace tessera::xema::internal
