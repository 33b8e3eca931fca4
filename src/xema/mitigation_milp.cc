#include "xema/mitigation_milp.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "solver/cbc_solver.h"
#include "solver/milp_model.h"

namespace tessera::xema {
namespace {

constexpr double kBytesPerMiB = 1024.0 * 1024.0;
// Seconds per MiB of shortfall: far above any request's time, so z > 0 only when nothing fits.
constexpr double kShortfallPenaltyPerMiB = 1e6;

bool Binds(const MitigationRow& row, const std::vector<int>& option) {
  return row.condition.action < 0 || option[row.condition.action] == row.condition.option;
}

}  // namespace

core::Status ValidateProblem(const MitigationProblem& p) {
  if (p.limit_bytes < 0) {
    return core::InvalidArgument(fmt::format("limit_bytes: got {}, must be >= 0", p.limit_bytes));
  }
  for (size_t a = 0; a < p.actions.size(); ++a) {
    const MitigationActionSpec& act = p.actions[a];
    if (act.options.empty()) {
      return core::InvalidArgument(
          fmt::format("actions[{}] ({}): no options; option 0 must be \"off\"", a, act.name));
    }
    for (size_t o = 0; o < act.options.size(); ++o) {
      const double t = act.options[o].added_s;
      if (!std::isfinite(t) || t < 0) {
        return core::InvalidArgument(
            fmt::format("actions[{}].options[{}] ({}): added_s {} must be finite and >= 0", a, o,
                        act.options[o].label, t));
      }
    }
  }
  auto valid_ref = [&](int action, int option) {
    return action >= 0 && action < static_cast<int>(p.actions.size()) && option >= 0 &&
           option < static_cast<int>(p.actions[action].options.size());
  };
  for (size_t r = 0; r < p.rows.size(); ++r) {
    const MitigationRow& row = p.rows[r];
    if (row.live_bytes < 0) {
      return core::InvalidArgument(
          fmt::format("rows[{}] ({}): live_bytes {} must be >= 0", r, row.point, row.live_bytes));
    }
    if (row.condition.action >= 0 && !valid_ref(row.condition.action, row.condition.option)) {
      return core::InvalidArgument(fmt::format("rows[{}] ({}): condition ({}, {}) does not exist",
                                               r, row.point, row.condition.action,
                                               row.condition.option));
    }
    for (const SavingTerm& s : row.savings) {
      if (!valid_ref(s.action, s.option)) {
        return core::InvalidArgument(fmt::format(
            "rows[{}] ({}): saving for ({}, {}) does not exist", r, row.point, s.action, s.option));
      }
    }
  }
  return core::Status::Ok();
}

int64_t PredictedRowBytes(const MitigationRow& row, const std::vector<int>& option) {
  if (!Binds(row, option)) return 0;
  int64_t bytes = row.live_bytes;
  for (const SavingTerm& s : row.savings) {
    if (option[s.action] == s.option) bytes -= s.bytes;
  }
  return bytes;
}

core::StatusOr<MitigationChoice> SolveMitigation(const MitigationProblem& p,
                                                 const std::vector<ForbiddenChoice>& forbidden,
                                                 double time_tolerance_s, double time_limit_s) {
  RETURN_IF_ERROR(ValidateProblem(p));
  for (size_t f = 0; f < forbidden.size(); ++f) {
    if (forbidden[f].option.size() != p.actions.size()) {
      return core::InvalidArgument(fmt::format("forbidden[{}]: {} options for {} actions", f,
                                               forbidden[f].option.size(), p.actions.size()));
    }
  }
  if (!(time_tolerance_s >= 0)) {
    return core::InvalidArgument(
        fmt::format("time_tolerance_s: got {}, must be >= 0", time_tolerance_s));
  }
  // The strength of each option (stage 2's weight).
  std::vector<std::vector<double>> largest(p.actions.size());
  for (size_t a = 0; a < p.actions.size(); ++a) largest[a].assign(p.actions[a].options.size(), 0);
  for (const MitigationRow& row : p.rows) {
    for (const SavingTerm& s : row.savings) {
      largest[s.action][s.option] =
          std::max(largest[s.action][s.option], static_cast<double>(s.bytes));
    }
  }
  solver::MilpModel m;
  std::vector<std::vector<int>> x(p.actions.size());
  for (size_t a = 0; a < p.actions.size(); ++a) {
    std::vector<solver::MilpTerm> one;
    for (size_t o = 0; o < p.actions[a].options.size(); ++o) {
      x[a].push_back(
          m.AddVariable(0, 1, p.actions[a].options[o].added_s, true, fmt::format("x_{}_{}", a, o)));
      one.push_back({x[a].back(), 1.0});
    }
    m.AddConstraint(std::move(one), 1, 1, fmt::format("one_{}", p.actions[a].name));
  }
  const int z = m.AddVariable(0, solver::kInfinity, kShortfallPenaltyPerMiB, false, "shortfall");
  const double limit = static_cast<double>(p.limit_bytes) / kBytesPerMiB;
  for (size_t r = 0; r < p.rows.size(); ++r) {
    const MitigationRow& row = p.rows[r];
    std::vector<solver::MilpTerm> terms;
    double negative = 0;  // N_r: bytes the options may add at this point
    for (const SavingTerm& s : row.savings) {
      terms.push_back({x[s.action][s.option], -static_cast<double>(s.bytes) / kBytesPerMiB});
      if (s.bytes < 0) negative += -static_cast<double>(s.bytes) / kBytesPerMiB;
    }
    const double live = static_cast<double>(row.live_bytes) / kBytesPerMiB;
    double rhs = limit;
    if (row.condition.action < 0) {
      rhs -= live;
    } else {
      terms.push_back({x[row.condition.action][row.condition.option], live + negative});
      rhs += negative;
    }
    terms.push_back({z, -1.0});
    m.AddConstraint(std::move(terms), -solver::kInfinity, rhs, fmt::format("row_{}", r));
  }
  for (const ForbiddenChoice& f : forbidden) {
    std::vector<solver::MilpTerm> terms;
    for (size_t a = 0; a < f.option.size(); ++a) terms.push_back({x[a][f.option[a]], 1.0});
    m.AddConstraint(std::move(terms), -solver::kInfinity,
                    static_cast<double>(f.option.size()) - 1.0, "forbidden");
  }
  solver::SolveOptions options;
  options.time_limit_s = time_limit_s;
  options.relative_gap = 0;
  ASSIGN_OR_RETURN(solver::SolveResult first, solver::Solve(m, options));
  if (!first.has_solution()) {
    return core::Internal(fmt::format("mitigation MILP: {} after {:.0f} ms",
                                      solver::SolveStatusName(first.status), first.solve_ms));
  }
  // Stage 2: the same shortfall, the time within the tolerance, the least strength.
  const double time_s = first.objective_value - kShortfallPenaltyPerMiB * first.values[z];
  std::vector<solver::MilpTerm> time_row;
  for (size_t a = 0; a < p.actions.size(); ++a) {
    for (size_t o = 0; o < x[a].size(); ++o) {
      if (p.actions[a].options[o].added_s > 0) {
        time_row.push_back({x[a][o], p.actions[a].options[o].added_s});
      }
      const double strength = p.actions[a].options[o].saved_bytes > 0
                                  ? static_cast<double>(p.actions[a].options[o].saved_bytes)
                                  : largest[a][o];
      m.SetObjectiveCoef(x[a][o], strength / kBytesPerMiB);
    }
  }
  m.SetObjectiveCoef(z, 0);
  m.SetVariableBounds(z, 0, first.values[z] + 1e-9);
  if (!time_row.empty()) {
    m.AddConstraint(std::move(time_row), -solver::kInfinity, time_s + time_tolerance_s, "time");
  }
  options.warm_start = first.values;
  ASSIGN_OR_RETURN(solver::SolveResult result, solver::Solve(m, options));
  if (!result.has_solution()) result = first;
  MitigationChoice choice;
  choice.solve_ms = first.solve_ms + result.solve_ms;
  for (size_t a = 0; a < p.actions.size(); ++a) {
    int chosen = 0;
    for (size_t o = 0; o < x[a].size(); ++o) {
      if (result.values[x[a][o]] > 0.5) chosen = static_cast<int>(o);
    }
    choice.option.push_back(chosen);
    choice.added_s += p.actions[a].options[chosen].added_s;
  }
  // Predicted peak and shortfall from the integer choice itself (not the solver's z).
  for (const MitigationRow& row : p.rows) {
    choice.predicted_peak_bytes =
        std::max(choice.predicted_peak_bytes, PredictedRowBytes(row, choice.option));
  }
  choice.shortfall_bytes = std::max<int64_t>(0, choice.predicted_peak_bytes - p.limit_bytes);
  return choice;
}

core::Json ToJson(const MitigationProblem& p, const MitigationChoice& c) {
  core::Json actions = core::Json::array();
  for (size_t a = 0; a < p.actions.size(); ++a) {
    const MitigationOptionSpec& o = p.actions[a].options[c.option[a]];
    core::Json options = core::Json::array();
    for (const MitigationOptionSpec& each : p.actions[a].options) {
      options.push_back(
          {{"label", each.label}, {"added_s", each.added_s}, {"saved_bytes", each.saved_bytes}});
    }
    actions.push_back({{"name", p.actions[a].name},
                       {"option", c.option[a]},
                       {"label", o.label},
                       {"added_s", o.added_s},
                       {"options", options}});
  }
  return {{"limit_bytes", p.limit_bytes},
          {"added_s", c.added_s},
          {"shortfall_bytes", c.shortfall_bytes},
          {"predicted_peak_bytes", c.predicted_peak_bytes},
          {"solve_ms", c.solve_ms},
          {"actions", actions}};
}

}  // namespace tessera::xema
