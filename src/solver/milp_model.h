// MilpModel: a solver-independent mixed-integer linear program, built incrementally.
//
//   minimise    sum_j objective_j * x_j  (+ objective_offset)
//   subject to  row_lower_i <= sum_j a_ij * x_j <= row_upper_i   for every constraint i
//               lower_j <= x_j <= upper_j, x_j integer where is_integer
//
// Variables and constraints are numbered 0, 1, ... in the order they are added; the index
// returned by AddVariable / AddConstraint is how callers refer to them (e.g. in a solution
// vector). Use kInfinity / -kInfinity for a missing bound (one-sided rows, free variables).
// The sense is always minimise; negate the objective to maximise.
//
// Adding does not check its input (so building stays cheap and infallible); Validate() does,
// and Solve() calls it first. A model can be solved, extended (e.g. a constraint that bounds
// the first objective) and solved again: solvers rebuild their own copy each time.
//
// A row may mention the same variable twice; the coefficients are summed. Zero coefficients
// are kept here but dropped when a solver copy is built.
//
// MilpModel is a plain value type (copyable, movable). It is not safe to mutate one model from
// several threads at once; concurrent const use (e.g. solving the same model) is fine.
#pragma once

#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::solver {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

// One nonzero of a constraint row: coef * x[var].
struct MilpTerm {
  int var = 0;
  double coef = 0.0;
};

struct MilpVariable {
  double lower = 0.0;
  double upper = kInfinity;
  double objective = 0.0;
  bool is_integer = false;
  std::string name;  // may be empty; DisplayName() then gives "x<index>"
};

struct MilpConstraint {
  std::vector<MilpTerm> terms;
  double lower = -kInfinity;
  double upper = kInfinity;
  std::string name;  // may be empty; DisplayName() then gives "row<index>"
};

class MilpModel {
 public:
  MilpModel() = default;

  // Adds x with lower <= x <= upper and objective coefficient `objective_coef`; returns its
  // index. Integer variables may have fractional bounds (they are rounded inward by solvers).
  int AddVariable(double lower, double upper, double objective_coef, bool is_integer,
                  std::string name = "");
  // Adds lower <= sum(terms) <= upper; returns its index. lower == upper is an equality.
  int AddConstraint(std::vector<MilpTerm> terms, double lower, double upper, std::string name = "");

  // Mutators for re-solving a slightly changed model. `var` / `row` must be a valid index
  // (CHECKed: a bad index here is a programming error, unlike bad data, which Validate finds).
  void SetVariableBounds(int var, double lower, double upper);
  void SetObjectiveCoef(int var, double objective_coef);
  void SetConstraintBounds(int row, double lower, double upper);
  // A constant added to every objective value (it does not change the optimum).
  void set_objective_offset(double offset) { objective_offset_ = offset; }

  int num_variables() const { return static_cast<int>(variables_.size()); }
  int num_constraints() const { return static_cast<int>(constraints_.size()); }
  // Total number of terms over all rows (before merging duplicates).
  int num_terms() const { return num_terms_; }
  int num_integer_variables() const { return num_integer_; }
  const MilpVariable& variable(int var) const;
  const MilpConstraint& constraint(int row) const;
  const std::vector<MilpVariable>& variables() const { return variables_; }
  const std::vector<MilpConstraint>& constraints() const { return constraints_; }
  double objective_offset() const { return objective_offset_; }

  // `name` or "x<var>" / "row<row>", quoted for messages: `variable 3 ("z_g0_c1")`.
  std::string VariableLabel(int var) const;
  std::string ConstraintLabel(int row) const;

  // OK, or InvalidArgument naming the first bad variable / row / term: a NaN anywhere, an
  // infinite objective or constraint coefficient, lower > upper, lower == +inf or
  // upper == -inf, or a variable index outside [0, num_variables()). (An integer variable
  // whose bounds contain no integer is valid data; the model is then infeasible.)
  core::Status Validate() const;

  // Objective of `values` (size num_variables(); CHECKed), including the offset.
  double ObjectiveValue(std::span<const double> values) const;

  // Largest violation of `values` (size num_variables(); CHECKed) against variable bounds,
  // integrality and rows, each measured relative to 1 + the magnitude of the quantity
  // involved (so 1e-6 means "off by one part in a million"). 0 for a feasible point.
  // If `what` is non-null it receives a description of the worst violation ("" if none).
  // The model must be valid (Validate() OK).
  double MaxViolation(std::span<const double> values, std::string* what = nullptr) const;

 private:
  std::vector<MilpVariable> variables_;
  std::vector<MilpConstraint> constraints_;
  double objective_offset_ = 0.0;
  int num_terms_ = 0;
  int num_integer_ = 0;
};

}  // namespace tessera::solver
