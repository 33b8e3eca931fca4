#include "solver/milp_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/check.h"

namespace tessera::solver {

int MilpModel::AddVariable(double lower, double upper, double objective_coef, bool is_integer,
                           std::string name) {
  variables_.push_back(MilpVariable{lower, upper, objective_coef, is_integer, std::move(name)});
  if (is_integer) ++num_integer_;
  return num_variables() - 1;
}

int MilpModel::AddConstraint(std::vector<MilpTerm> terms, double lower, double upper,
                             std::string name) {
  num_terms_ += static_cast<int>(terms.size());
  constraints_.push_back(MilpConstraint{std::move(terms), lower, upper, std::move(name)});
  return num_constraints() - 1;
}

void MilpModel::SetVariableBounds(int var, double lower, double upper) {
  CHECK(var >= 0 && var < num_variables()) << "variable index " << var;
  variables_[var].lower = lower;
  variables_[var].upper = upper;
}

void MilpModel::SetObjectiveCoef(int var, double objective_coef) {
  CHECK(var >= 0 && var < num_variables()) << "variable index " << var;
  variables_[var].objective = objective_coef;
}

void MilpModel::SetConstraintBounds(int row, double lower, double upper) {
  CHECK(row >= 0 && row < num_constraints()) << "constraint index " << row;
  constraints_[row].lower = lower;
  constraints_[row].upper = upper;
}

const MilpVariable& MilpModel::variable(int var) const {
  CHECK(var >= 0 && var < num_variables()) << "variable index " << var;
  return variables_[var];
}

const MilpConstraint& MilpModel::constraint(int row) const {
  CHECK(row >= 0 && row < num_constraints()) << "constraint index " << row;
  return constraints_[row];
}

std::string MilpModel::VariableLabel(int var) const {
  const std::string& name = variable(var).name;
  return fmt::format("variable {} (\"{}\")", var, name.empty() ? fmt::format("x{}", var) : name);
}

std::string MilpModel::ConstraintLabel(int row) const {
  const std::string& name = constraint(row).name;
  return fmt::format("constraint {} (\"{}\")", row,
                     name.empty() ? fmt::format("row{}", row) : name);
}

namespace {

// Checks a [lower, upper] pair; `what` names its owner for the message.
core::Status CheckBounds(double lower, double upper, const std::string& what) {
  if (std::isnan(lower) || std::isnan(upper)) {
    return core::InvalidArgument(
        fmt::format("{}: bounds [{}, {}] contain NaN", what, lower, upper));
  }
  if (lower > upper) {
    return core::InvalidArgument(fmt::format(
        "{}: lower bound {} > upper bound {}, must be lower <= upper", what, lower, upper));
  }
  if (lower == kInfinity || upper == -kInfinity) {
    return core::InvalidArgument(
        fmt::format("{}: bounds [{}, {}] are empty, lower must be < +inf and upper > -inf", what,
                    lower, upper));
  }
  return core::Status::Ok();
}

}  // namespace

core::Status MilpModel::Validate() const {
  if (!std::isfinite(objective_offset_)) {
    return core::InvalidArgument(
        fmt::format("objective offset is {}, must be finite", objective_offset_));
  }
  for (int j = 0; j < num_variables(); ++j) {
    const MilpVariable& v = variables_[j];
    RETURN_IF_ERROR(CheckBounds(v.lower, v.upper, VariableLabel(j)));
    if (!std::isfinite(v.objective)) {
      return core::InvalidArgument(fmt::format("{}: objective coefficient is {}, must be finite",
                                               VariableLabel(j), v.objective));
    }
  }
  for (int i = 0; i < num_constraints(); ++i) {
    const MilpConstraint& c = constraints_[i];
    RETURN_IF_ERROR(CheckBounds(c.lower, c.upper, ConstraintLabel(i)));
    for (size_t k = 0; k < c.terms.size(); ++k) {
      const MilpTerm& t = c.terms[k];
      if (t.var < 0 || t.var >= num_variables()) {
        return core::InvalidArgument(
            fmt::format("{}: term {} has variable index {}, must be in [0, {})", ConstraintLabel(i),
                        k, t.var, num_variables()));
      }
      if (!std::isfinite(t.coef)) {
        return core::InvalidArgument(
            fmt::format("{}: term {} ({}) has coefficient {}, must be finite", ConstraintLabel(i),
                        k, VariableLabel(t.var), t.coef));
      }
    }
  }
  return core::Status::Ok();
}

double MilpModel::ObjectiveValue(std::span<const double> values) const {
  CHECK_EQ(values.size(), variables_.size());
  double sum = objective_offset_;
  for (size_t j = 0; j < values.size(); ++j) sum += variables_[j].objective * values[j];
  return sum;
}

double MilpModel::MaxViolation(std::span<const double> values, std::string* what) const {
  CHECK_EQ(values.size(), variables_.size());
  double worst = 0.0;
  std::string worst_what;
  auto consider = [&](double violation, auto describe) {
    if (violation > worst || std::isnan(violation)) {
      worst = std::isnan(violation) ? kInfinity : violation;
      if (what != nullptr) worst_what = describe();
    }
  };
  for (int j = 0; j < num_variables(); ++j) {
    const MilpVariable& v = variables_[j];
    const double x = values[j];
    const double scale = 1.0 + std::fabs(x);
    consider((v.lower - x) / scale,
             [&] { return fmt::format("{} = {} < lower bound {}", VariableLabel(j), x, v.lower); });
    consider((x - v.upper) / scale,
             [&] { return fmt::format("{} = {} > upper bound {}", VariableLabel(j), x, v.upper); });
    if (v.is_integer) {
      consider(std::fabs(x - std::round(x)) / scale,
               [&] { return fmt::format("{} = {} is not integral", VariableLabel(j), x); });
    }
  }
  for (int i = 0; i < num_constraints(); ++i) {
    const MilpConstraint& c = constraints_[i];
    double activity = 0.0;
    double magnitude = 0.0;
    for (const MilpTerm& t : c.terms) {
      activity += t.coef * values[t.var];
      magnitude += std::fabs(t.coef * values[t.var]);
    }
    const double scale = 1.0 + magnitude;
    consider((c.lower - activity) / scale, [&] {
      return fmt::format("{}: activity {} < lower {}", ConstraintLabel(i), activity, c.lower);
    });
    consider((activity - c.upper) / scale, [&] {
      return fmt::format("{}: activity {} > upper {}", ConstraintLabel(i), activity, c.upper);
    });
  }
  if (what != nullptr) *what = worst_what;
  return worst;
}

}  // namespace tessera::solver
