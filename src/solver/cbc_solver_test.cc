#include "solver/cbc_solver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/rng.h"

namespace tessera::solver {
namespace {

using core::StatusCode;

// Test suites are named solver_* so that `ctest -R solver_` selects them.

// ---------------------------------------------------------------------------------------------
// Instances and brute-force oracles.

struct Knapsack {
  std::vector<int> weight, value;
  int capacity = 0;
};

Knapsack RandomKnapsack(core::Rng& rng, int items) {
  Knapsack k;
  int total = 0;
  for (int i = 0; i < items; ++i) {
    k.weight.push_back(1 + static_cast<int>(rng.Below(20)));
    k.value.push_back(1 + static_cast<int>(rng.Below(30)));
    total += k.weight.back();
  }
  k.capacity = total / 2;
  return k;
}

// Maximise value: minimise -sum value * x, binaries x.
MilpModel KnapsackModel(const Knapsack& k) {
  MilpModel m;
  std::vector<MilpTerm> row;
  for (size_t i = 0; i < k.weight.size(); ++i) {
    const int x = m.AddVariable(0, 1, -k.value[i], true, "take" + std::to_string(i));
    row.push_back({x, static_cast<double>(k.weight[i])});
  }
  m.AddConstraint(row, -kInfinity, k.capacity, "capacity");
  return m;
}

int BruteForceKnapsack(const Knapsack& k) {
  const int n = static_cast<int>(k.weight.size());
  int best = 0;
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    int w = 0, v = 0;
    for (int i = 0; i < n; ++i) {
      if (mask >> i & 1) {
        w += k.weight[i];
        v += k.value[i];
      }
    }
    if (w <= k.capacity) best = std::max(best, v);
  }
  return best;
}

// Makespan assignment: group g has count[g] identical items; option j of group g puts an item
// on the ranks in rank_sets[option_set[g][j]] and charges each of them load[g][j]. Integer
// z[g][j] = items of g using option j (sum_j z = count[g]); minimise T >= every rank's load.
struct Makespan {
  int ranks = 0;
  std::vector<std::vector<int>> rank_sets;   // each a list of ranks
  std::vector<int> count;                    // per group
  std::vector<std::vector<int>> option_set;  // [g][j] -> index into rank_sets
  std::vector<std::vector<double>> load;     // [g][j] per-rank load of one item
};

struct MakespanModel {
  MilpModel model;
  int t = -1;
  std::vector<std::vector<int>> z;  // variable indices [g][j]
  std::vector<int> rank_rows;       // row index per rank (sum load - T <= 0)
};

MakespanModel BuildMakespan(const Makespan& p) {
  MakespanModel mm;
  MilpModel& m = mm.model;
  mm.t = m.AddVariable(0, kInfinity, 1.0, false, "T");
  std::vector<std::vector<MilpTerm>> per_rank(p.ranks);
  for (size_t g = 0; g < p.count.size(); ++g) {
    std::vector<MilpTerm> assign;
    mm.z.emplace_back();
    for (size_t j = 0; j < p.load[g].size(); ++j) {
      const int z = m.AddVariable(0, p.count[g], 0.0, true,
                                  "z_g" + std::to_string(g) + "_o" + std::to_string(j));
      mm.z[g].push_back(z);
      assign.push_back({z, 1.0});
      for (int r : p.rank_sets[p.option_set[g][j]]) per_rank[r].push_back({z, p.load[g][j]});
    }
    m.AddConstraint(assign, p.count[g], p.count[g], "assign_g" + std::to_string(g));
  }
  for (int r = 0; r < p.ranks; ++r) {
    per_rank[r].push_back({mm.t, -1.0});
    mm.rank_rows.push_back(
        m.AddConstraint(per_rank[r], -kInfinity, 0.0, "load_r" + std::to_string(r)));
  }
  return mm;
}

// A random instance: rank sets are the aligned power-of-two blocks of `ranks` ranks.
Makespan RandomMakespan(core::Rng& rng, int groups, int options, int ranks, int max_count) {
  Makespan p;
  p.ranks = ranks;
  for (int size = 1; size <= ranks; size *= 2) {
    for (int start = 0; start + size <= ranks; start += size) {
      std::vector<int> set;
      for (int r = start; r < start + size; ++r) set.push_back(r);
      p.rank_sets.push_back(set);
    }
  }
  for (int g = 0; g < groups; ++g) {
    p.count.push_back(1 + static_cast<int>(rng.Below(max_count)));
    const double work = rng.Uniform(1.0, 10.0);
    std::vector<int> sets;
    std::vector<double> loads;
    for (int j = 0; j < options; ++j) {
      const int s = static_cast<int>(rng.Below(p.rank_sets.size()));
      const double size = static_cast<double>(p.rank_sets[s].size());
      sets.push_back(s);
      // Splitting over more ranks costs some efficiency.
      loads.push_back(
          std::round(100.0 * work / size * (1.0 + 0.1 * std::log2(size)) * rng.Uniform(0.9, 1.1)) /
          100.0);
    }
    p.option_set.push_back(sets);
    p.load.push_back(loads);
  }
  return p;
}

// Enumerates every split of every group's items over its two options.
double BruteForceMakespan2(const Makespan& p) {
  const int groups = static_cast<int>(p.count.size());
  double best = kInfinity;
  std::vector<int> first(groups, 0);  // items on option 0; the rest on option 1
  while (true) {
    std::vector<double> rank_load(p.ranks, 0.0);
    for (int g = 0; g < groups; ++g) {
      const int uses[2] = {first[g], p.count[g] - first[g]};
      for (int j = 0; j < 2; ++j) {
        for (int r : p.rank_sets[p.option_set[g][j]]) rank_load[r] += uses[j] * p.load[g][j];
      }
    }
    best = std::min(best, *std::max_element(rank_load.begin(), rank_load.end()));
    int g = 0;
    while (g < groups && first[g] == p.count[g]) first[g++] = 0;
    if (g == groups) break;
    ++first[g];
  }
  return best;
}

// Market split (Cornuejols-Dawande) with slack: famously hard to prove optimal, while any
// 0/1 vector is feasible. minimise sum |s_i| s.t. sum_j a_ij x_j + s+_i - s-_i = b_i.
MilpModel MarketSplit(core::Rng& rng, int rows, int cols) {
  MilpModel m;
  std::vector<int> x;
  for (int j = 0; j < cols; ++j) x.push_back(m.AddVariable(0, 1, 0.0, true));
  for (int i = 0; i < rows; ++i) {
    std::vector<MilpTerm> row;
    double total = 0;
    for (int j = 0; j < cols; ++j) {
      const double a = static_cast<double>(rng.Below(100));
      row.push_back({x[j], a});
      total += a;
    }
    row.push_back({m.AddVariable(0, kInfinity, 1.0, false), 1.0});
    row.push_back({m.AddVariable(0, kInfinity, 1.0, false), -1.0});
    const double b = std::floor(total / 2);
    m.AddConstraint(row, b, b);
  }
  return m;
}

// Checks the result's own consistency against the model.
void ExpectConsistent(const MilpModel& m, const SolveResult& r) {
  if (r.has_solution()) {
    ASSERT_EQ(static_cast<int>(r.values.size()), m.num_variables());
    std::string what;
    EXPECT_LE(m.MaxViolation(r.values, &what), 1e-6) << what;
    EXPECT_DOUBLE_EQ(r.objective_value, m.ObjectiveValue(r.values));
    EXPECT_LE(r.best_bound, r.objective_value);
    EXPECT_GE(r.relative_gap, 0.0);
    EXPECT_NEAR(r.relative_gap,
                (r.objective_value - r.best_bound) / std::max(std::fabs(r.objective_value), 1e-9),
                1e-12);
    for (int j = 0; j < m.num_variables(); ++j) {
      if (m.variable(j).is_integer) {
        EXPECT_EQ(r.values[j], std::round(r.values[j]));
      }
    }
  } else {
    EXPECT_TRUE(r.values.empty());
    EXPECT_EQ(r.objective_value, kInfinity);
    EXPECT_EQ(r.relative_gap, kInfinity);
  }
  EXPECT_GE(r.solve_ms, 0.0);
  EXPECT_GE(r.node_count, 0);
}

// ---------------------------------------------------------------------------------------------
// Tests run under both algorithms.

class solver_Cbc : public ::testing::TestWithParam<CbcAlgorithm> {
 protected:
  SolveOptions Options() const {
    SolveOptions o;
    o.algorithm = GetParam();
    return o;
  }
};

TEST_P(solver_Cbc, TinyLpHasKnownOptimum) {
  // max x + y s.t. x + 2y <= 4, 3x + y <= 6, x, y >= 0: optimum (8/5, 6/5), value 14/5.
  MilpModel m;
  const int x = m.AddVariable(0, kInfinity, -1.0, false, "x");
  const int y = m.AddVariable(0, kInfinity, -1.0, false, "y");
  m.AddConstraint({{x, 1}, {y, 2}}, -kInfinity, 4);
  m.AddConstraint({{x, 3}, {y, 1}}, -kInfinity, 6);
  auto r = Solve(m, Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, SolveStatus::kOptimal);
  EXPECT_NEAR(r->objective_value, -2.8, 1e-9);
  EXPECT_NEAR(r->values[x], 1.6, 1e-9);
  EXPECT_NEAR(r->values[y], 1.2, 1e-9);
  EXPECT_NEAR(r->best_bound, -2.8, 1e-9);
  EXPECT_NEAR(r->relative_gap, 0.0, 1e-12);
  ExpectConsistent(m, *r);
}

TEST_P(solver_Cbc, KnapsackMatchesBruteForceOnRandomInstances) {
  core::Rng rng(20240611);
  for (int instance = 0; instance < 50; ++instance) {
    const Knapsack k = RandomKnapsack(rng, 10);
    const MilpModel m = KnapsackModel(k);
    auto r = Solve(m, Options());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, SolveStatus::kOptimal) << "instance " << instance;
    EXPECT_EQ(r->objective_value, -BruteForceKnapsack(k)) << "instance " << instance;
    ExpectConsistent(m, *r);
  }
}

TEST_P(solver_Cbc, MakespanMatchesBruteForce) {
  core::Rng rng(7);
  for (int instance = 0; instance < 30; ++instance) {
    const Makespan p = RandomMakespan(rng, /*groups=*/3, /*options=*/2, /*ranks=*/2,
                                      /*max_count=*/5);
    const MakespanModel mm = BuildMakespan(p);
    auto r = Solve(mm.model, Options());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, SolveStatus::kOptimal);
    EXPECT_NEAR(r->objective_value, BruteForceMakespan2(p), 1e-7) << "instance " << instance;
    ExpectConsistent(mm.model, *r);
  }
}

TEST_P(solver_Cbc, ResolveWithAddedConstraintIsLexicographic) {
  // Stage 1: minimise T. Stage 2: keep loads <= T* and minimise items on option 1 (a second
  // objective), verified against brute force over the same splits.
  core::Rng rng(99);
  for (int instance = 0; instance < 10; ++instance) {
    const Makespan p = RandomMakespan(rng, 3, 2, 2, 4);
    MakespanModel mm = BuildMakespan(p);
    auto first = Solve(mm.model, Options());
    ASSERT_TRUE(first.ok() && first->status == SolveStatus::kOptimal);
    const double t_star = first->objective_value;

    MilpModel& m = mm.model;
    m.SetObjectiveCoef(mm.t, 0.0);
    m.SetVariableBounds(mm.t, 0.0, t_star * (1 + 1e-9));
    for (auto& zg : mm.z) m.SetObjectiveCoef(zg[1], 1.0);
    auto second = Solve(m, Options());
    ASSERT_TRUE(second.ok() && second->status == SolveStatus::kOptimal);
    ExpectConsistent(m, *second);

    // Brute force: fewest option-1 items among splits with makespan <= T*.
    int best = std::numeric_limits<int>::max();
    const int groups = static_cast<int>(p.count.size());
    std::vector<int> first_uses(groups, 0);
    while (true) {
      std::vector<double> rank_load(p.ranks, 0.0);
      int option1 = 0;
      for (int g = 0; g < groups; ++g) {
        const int uses[2] = {first_uses[g], p.count[g] - first_uses[g]};
        option1 += uses[1];
        for (int j = 0; j < 2; ++j) {
          for (int r : p.rank_sets[p.option_set[g][j]]) rank_load[r] += uses[j] * p.load[g][j];
        }
      }
      if (*std::max_element(rank_load.begin(), rank_load.end()) <= t_star * (1 + 1e-9)) {
        best = std::min(best, option1);
      }
      int g = 0;
      while (g < groups && first_uses[g] == p.count[g]) first_uses[g++] = 0;
      if (g == groups) break;
      ++first_uses[g];
    }
    EXPECT_EQ(second->objective_value, best) << "instance " << instance;
  }
}

TEST_P(solver_Cbc, RelativeGapStopsWithAProvenGap) {
  // Min-max models have weak LP bounds, so an exact proof takes long; a loose gap does not.
  core::Rng rng(13);
  for (int instance = 0; instance < 3; ++instance) {
    const Makespan p = RandomMakespan(rng, 6, 10, 8, 6);
    const MakespanModel mm = BuildMakespan(p);
    SolveOptions o = Options();
    o.relative_gap = 0.5;
    o.time_limit_s = 60;  // a safety net only
    auto r = Solve(mm.model, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, SolveStatus::kOptimal) << SolveStatusName(r->status);
    EXPECT_LE(r->relative_gap, 0.5 + 1e-9);
    ExpectConsistent(mm.model, *r);
  }
}

// Progress: reports during the search (here every node event: interval 0) that are
// consistent, then one final report with the result's figures. What the CLI prints of a long
// joint solve (its incumbent, bound and gap) comes from these.
TEST_P(solver_Cbc, ProgressIsReportedDuringTheSearchAndAtTheEnd) {
  core::Rng rng(29);
  const Knapsack k = RandomKnapsack(rng, 40);
  MilpModel m = KnapsackModel(k);
  m.set_objective_offset(1000);
  std::vector<SolveProgress> reports;
  SolveOptions o = Options();
  o.progress = [&reports](const SolveProgress& p) { reports.push_back(p); };
  o.progress_interval_s = 0;
  auto r = Solve(m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(reports.empty());
  const SolveProgress& last = reports.back();
  EXPECT_TRUE(last.done);
  EXPECT_EQ(last.incumbent, r->objective_value);
  EXPECT_EQ(last.best_bound, r->best_bound);
  EXPECT_EQ(last.relative_gap, r->relative_gap);
  EXPECT_EQ(last.nodes, r->node_count);
  EXPECT_NEAR(last.elapsed_s, r->solve_ms / 1000, 1e-9);
  int during = 0;
  for (size_t i = 0; i + 1 < reports.size(); ++i) {
    const SolveProgress& p = reports[i];
    EXPECT_FALSE(p.done);
    ++during;
    if (i > 0) {
      EXPECT_GE(p.nodes, reports[i - 1].nodes);
      EXPECT_GE(p.elapsed_s, reports[i - 1].elapsed_s);
    }
    // The offset is included: every incumbent is the true objective of a solution.
    if (std::isfinite(p.incumbent)) {
      EXPECT_GE(p.incumbent, r->objective_value - 1e-6);
    }
    if (std::isfinite(p.incumbent) && std::isfinite(p.best_bound)) {
      EXPECT_LE(p.best_bound, p.incumbent);
      EXPECT_GE(p.relative_gap, 0);
    } else {
      EXPECT_EQ(p.relative_gap, kInfinity);
    }
  }
  // The search reported while it ran (heuristic and tree events come even when CBC proves
  // optimality at the root: 9 reports for the stand-alone driver, 53 for plain B&B here).
  EXPECT_GT(during, 0);
  // A feasible warm start is the incumbent from the first report on, even above the cutoff.
  reports.clear();
  o.warm_start = std::vector<double>(m.num_variables(), 0.0);  // take nothing: objective 1000
  o.objective_cutoff = 999;
  ASSERT_TRUE(Solve(m, o).ok());
  ASSERT_FALSE(reports.empty());
  for (const SolveProgress& p : reports) {
    EXPECT_LE(p.incumbent, 1000);
    EXPECT_LE(p.best_bound, p.incumbent);
  }
  // A negative interval is refused.
  o.progress_interval_s = -1;
  EXPECT_EQ(Solve(m, o).status().code(), core::StatusCode::kInvalidArgument);
}

TEST_P(solver_Cbc, InfeasibleModelsAreAStatusNotAnError) {
  // LP-infeasible integer model.
  MilpModel a;
  const int x = a.AddVariable(0, 10, 1, true);
  const int y = a.AddVariable(0, 10, 1, true);
  a.AddConstraint({{x, 1}, {y, 1}}, 3, kInfinity);
  a.AddConstraint({{x, 1}, {y, 1}}, -kInfinity, 2);
  // LP-feasible but integer-infeasible: 2x + 2y = 3.
  MilpModel b;
  const int u = b.AddVariable(0, 10, 1, true);
  const int v = b.AddVariable(0, 10, 1, true);
  b.AddConstraint({{u, 2}, {v, 2}}, 3, 3);
  // Continuous infeasible LP.
  MilpModel c;
  const int w = c.AddVariable(0, 1, 1, false);
  c.AddConstraint({{w, 1}}, 2, kInfinity);
  for (const MilpModel* m : {&a, &b, &c}) {
    auto r = Solve(*m, Options());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, SolveStatus::kInfeasible);
    EXPECT_EQ(r->best_bound, kInfinity);
    ExpectConsistent(*m, *r);
  }
}

TEST_P(solver_Cbc, UnboundedModelReportsUnbounded) {
  // Documented behaviour: a model whose continuous relaxation is unbounded gives kUnbounded
  // and no values, for LPs and MILPs alike. Bounding the variable makes it optimal.
  for (bool integer : {false, true}) {
    MilpModel m;
    const int x = m.AddVariable(0, kInfinity, -1.0, integer, "x");
    const int y = m.AddVariable(0, 5, 0.0, integer, "y");
    m.AddConstraint({{x, 1}, {y, -1}}, -kInfinity, kInfinity);  // free row
    m.AddConstraint({{x, 1}, {y, -2}}, 0, kInfinity);
    auto r = Solve(m, Options());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, SolveStatus::kUnbounded) << "integer " << integer;
    ExpectConsistent(m, *r);

    m.SetVariableBounds(x, 0, 7);
    r = Solve(m, Options());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, SolveStatus::kOptimal);
    EXPECT_NEAR(r->objective_value, -7, 1e-9);
  }
}

TEST_P(solver_Cbc, TimeLimitGivesFeasibleOrNoSolutionWithGap) {
  core::Rng rng(5);
  const MilpModel m = MarketSplit(rng, 4, 30);
  SolveOptions o = Options();
  o.time_limit_s = 0.2;
  auto r = Solve(m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->status == SolveStatus::kFeasible || r->status == SolveStatus::kNoSolutionFound)
      << SolveStatusName(r->status);
  ExpectConsistent(m, *r);
  if (r->status == SolveStatus::kFeasible) {
    EXPECT_GT(r->relative_gap, 0.0);
  }
}

TEST_P(solver_Cbc, FeasibleWarmStartIsAnIncumbentAtLeastAsGood) {
  // On the hard instance with a short limit, a feasible warm start guarantees a solution.
  core::Rng rng(5);
  const MilpModel m = MarketSplit(rng, 4, 30);
  // x = alternate 0/1; slacks set to match each row.
  std::vector<double> ws(m.num_variables(), 0.0);
  for (int j = 0; j < 30; ++j) ws[j] = j % 2;
  for (int i = 0; i < m.num_constraints(); ++i) {
    const MilpConstraint& c = m.constraint(i);
    double activity = 0;
    for (int k = 0; k < 30; ++k) activity += c.terms[k].coef * ws[c.terms[k].var];
    const double diff = c.lower - activity;
    ws[c.terms[30].var] = std::max(diff, 0.0);
    ws[c.terms[31].var] = std::max(-diff, 0.0);
  }
  ASSERT_EQ(m.MaxViolation(ws), 0.0);
  const double ws_objective = m.ObjectiveValue(ws);
  // 1e-4 s leaves CBC about a millisecond: the warm start (or better) must come back.
  for (double limit_s : {1e-4, 0.2}) {
    SolveOptions o = Options();
    o.time_limit_s = limit_s;
    o.warm_start = ws;
    auto r = Solve(m, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(r->has_solution()) << SolveStatusName(r->status) << " limit " << limit_s;
    EXPECT_LE(r->objective_value, ws_objective);
    if (r->incumbent_is_warm_start) {
      EXPECT_EQ(r->values, ws);
    }
    ExpectConsistent(m, *r);
  }

  // On knapsacks: an optimal warm start is kept; a poor one is improved to the optimum.
  core::Rng krng(11);
  for (int instance = 0; instance < 10; ++instance) {
    const Knapsack k = RandomKnapsack(krng, 10);
    const MilpModel km = KnapsackModel(k);
    auto best = Solve(km, Options());
    ASSERT_TRUE(best.ok() && best->status == SolveStatus::kOptimal);
    SolveOptions ko = Options();
    ko.warm_start = best->values;
    auto again = Solve(km, ko);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->status, SolveStatus::kOptimal);
    EXPECT_EQ(again->objective_value, best->objective_value);
    ko.warm_start = std::vector<double>(km.num_variables(), 0.0);  // take nothing
    again = Solve(km, ko);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->status, SolveStatus::kOptimal);
    EXPECT_EQ(again->objective_value, best->objective_value);
    EXPECT_FALSE(again->incumbent_is_warm_start);
  }
}

TEST_P(solver_Cbc, InfeasibleWarmStartIsHarmless) {
  core::Rng rng(3);
  const Knapsack k = RandomKnapsack(rng, 10);
  const MilpModel m = KnapsackModel(k);
  SolveOptions o = Options();
  o.warm_start = std::vector<double>(m.num_variables(), 1.0);  // over capacity
  auto r = Solve(m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, SolveStatus::kOptimal);
  EXPECT_EQ(r->objective_value, -BruteForceKnapsack(k));
  EXPECT_FALSE(r->incumbent_is_warm_start);
}

TEST_P(solver_Cbc, CutoffAtOptimumKeepsItBelowMakesInfeasible) {
  core::Rng rng(17);
  for (int instance = 0; instance < 5; ++instance) {
    const Knapsack k = RandomKnapsack(rng, 10);
    const MilpModel m = KnapsackModel(k);
    const double opt = -BruteForceKnapsack(k);
    SolveOptions o = Options();
    o.objective_cutoff = opt;
    auto r = Solve(m, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, SolveStatus::kOptimal);
    EXPECT_EQ(r->objective_value, opt);
    o.objective_cutoff = opt - 0.5;
    r = Solve(m, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, SolveStatus::kInfeasible);
  }
}

TEST_P(solver_Cbc, ObjectiveOffsetShiftsValueBoundAndCutoff) {
  core::Rng rng(23);
  const Knapsack k = RandomKnapsack(rng, 10);
  MilpModel m = KnapsackModel(k);
  const double opt = -BruteForceKnapsack(k);
  m.set_objective_offset(1000.0);
  SolveOptions o = Options();
  o.objective_cutoff = 1000.0 + opt;
  auto r = Solve(m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, SolveStatus::kOptimal);
  EXPECT_EQ(r->objective_value, 1000.0 + opt);
  EXPECT_NEAR(r->best_bound, 1000.0 + opt, 1e-6);
  ExpectConsistent(m, *r);
}

TEST_P(solver_Cbc, ThreadsGiveTheSameOptimum) {
  core::Rng rng(31);
  for (int instance = 0; instance < 5; ++instance) {
    const Makespan p = RandomMakespan(rng, 3, 4, 4, 4);
    const MakespanModel mm = BuildMakespan(p);
    auto one = Solve(mm.model, Options());
    SolveOptions o = Options();
    o.threads = 2;
    auto two = Solve(mm.model, o);
    ASSERT_TRUE(one.ok() && two.ok());
    ASSERT_EQ(one->status, SolveStatus::kOptimal);
    ASSERT_EQ(two->status, SolveStatus::kOptimal);
    EXPECT_NEAR(one->objective_value, two->objective_value, 1e-7);
  }
}

TEST_P(solver_Cbc, DuplicateTermsAreSummedAndEmptyRowsAllowed) {
  MilpModel m;
  const int x = m.AddVariable(0, 10, -1, true);
  m.AddConstraint({{x, 1.0}, {x, 1.5}, {x, 0.0}}, -kInfinity, 7);  // 2.5 x <= 7 -> x <= 2
  m.AddConstraint({}, -1, 1);
  auto r = Solve(m, Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, SolveStatus::kOptimal);
  EXPECT_EQ(r->values[x], 2.0);
}

TEST_P(solver_Cbc, NothingIsPrintedToStdout) {
  core::Rng rng(41);
  const Makespan p = RandomMakespan(rng, 6, 8, 8, 8);
  const MakespanModel mm = BuildMakespan(p);
  MilpModel lp;
  lp.AddVariable(0, 1, -1, false);
  SolveOptions o = Options();
  o.time_limit_s = 0.1;
  testing::internal::CaptureStdout();
  auto r1 = Solve(mm.model, o);
  auto r2 = Solve(lp, Options());
  core::Rng ms_rng(5);
  o.threads = 2;
  auto r3 = Solve(MarketSplit(ms_rng, 4, 30), o);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, "");
  ASSERT_TRUE(r1.ok() && r2.ok() && r3.ok());
  EXPECT_TRUE(r1->has_solution() || r1->status == SolveStatus::kNoSolutionFound);
  EXPECT_EQ(r2->status, SolveStatus::kOptimal);
}

TEST_P(solver_Cbc, BadInputIsInvalidArgumentNamingIt) {
  MilpModel m;
  const int x = m.AddVariable(0, 1, 1, true, "pick");
  m.AddConstraint({{x, std::nan("")}}, 0, 1, "nan_row");
  auto r = Solve(m, Options());
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("nan_row"), std::string::npos);

  MilpModel m2;
  m2.AddVariable(2, 1, 1, true, "inverted");
  r = Solve(m2, Options());
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("inverted"), std::string::npos);

  MilpModel m3;
  m3.AddVariable(0, 1, 1, true);
  m3.AddConstraint({{5, 1.0}}, 0, 1, "far");
  r = Solve(m3, Options());
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("far"), std::string::npos);
  EXPECT_NE(r.status().message().find("variable index 5"), std::string::npos);

  MilpModel ok;
  ok.AddVariable(0, 1, 1, true, "v");
  struct BadOption {
    SolveOptions options;
    std::string field;
  };
  std::vector<BadOption> bad(7, BadOption{Options(), ""});
  bad[0].options.time_limit_s = 0;
  bad[0].field = "time_limit_s";
  bad[1].options.relative_gap = -1;
  bad[1].field = "relative_gap";
  bad[2].options.absolute_gap = std::nan("");
  bad[2].field = "absolute_gap";
  bad[3].options.threads = 0;
  bad[3].field = "threads";
  bad[4].options.warm_start = std::vector<double>{0, 1};
  bad[4].field = "warm_start";
  bad[5].options.warm_start = std::vector<double>{std::nan("")};
  bad[5].field = "warm_start[0]";
  bad[6].options.objective_cutoff = kInfinity;
  bad[6].field = "objective_cutoff";
  for (const BadOption& b : bad) {
    r = Solve(ok, b.options);
    ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << b.field;
    EXPECT_NE(r.status().message().find(b.field), std::string::npos) << r.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, solver_Cbc,
                         ::testing::Values(CbcAlgorithm::kCbcNoCuts, CbcAlgorithm::kCbcDefaults,
                                           CbcAlgorithm::kPlainBranchAndBound),
                         [](const ::testing::TestParamInfo<CbcAlgorithm>& info) {
                           switch (info.param) {
                             case CbcAlgorithm::kCbcNoCuts:
                               return std::string("CbcNoCuts");
                             case CbcAlgorithm::kCbcDefaults:
                               return std::string("CbcDefaults");
                             case CbcAlgorithm::kPlainBranchAndBound:
                               return std::string("PlainBranchAndBound");
                           }
                           return std::string("Unknown");
                         });

TEST(solver_CbcNames, StatusAndAlgorithmNames) {
  EXPECT_STREQ(SolveStatusName(SolveStatus::kOptimal), "optimal");
  EXPECT_STREQ(SolveStatusName(SolveStatus::kNoSolutionFound), "no solution found");
  EXPECT_STREQ(CbcAlgorithmName(CbcAlgorithm::kCbcNoCuts), "cbc-no-cuts");
  EXPECT_STREQ(CbcAlgorithmName(CbcAlgorithm::kPlainBranchAndBound), "plain-branch-and-bound");
}

}  // namespace
}  // namespace tessera::solver
