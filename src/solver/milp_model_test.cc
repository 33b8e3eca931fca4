#include "solver/milp_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace tessera::solver {
namespace {

using core::StatusCode;

// Test suites are named solver_* so that `ctest -R solver_` selects them.

MilpModel SmallModel() {
  MilpModel m;
  const int x = m.AddVariable(0, 10, 1.0, /*is_integer=*/true, "x");
  const int y = m.AddVariable(-kInfinity, kInfinity, -2.0, /*is_integer=*/false);
  m.AddConstraint({{x, 1.0}, {y, 1.0}}, -kInfinity, 5.0, "cap");
  m.AddConstraint({{x, 1.0}, {y, -1.0}}, 1.0, 1.0);
  return m;
}

TEST(solver_MilpModel, AddReturnsSequentialIndicesAndCounts) {
  MilpModel m = SmallModel();
  EXPECT_EQ(m.num_variables(), 2);
  EXPECT_EQ(m.num_constraints(), 2);
  EXPECT_EQ(m.num_terms(), 4);
  EXPECT_EQ(m.num_integer_variables(), 1);
  EXPECT_EQ(m.AddVariable(0, 1, 0, true), 2);
  EXPECT_EQ(m.AddConstraint({}, 0, 0), 2);
  EXPECT_EQ(m.num_integer_variables(), 2);
  EXPECT_EQ(m.variable(0).name, "x");
  EXPECT_EQ(m.constraint(0).upper, 5.0);
  EXPECT_TRUE(m.Validate().ok()) << m.Validate().ToString();
}

TEST(solver_MilpModel, LabelsUseNameOrIndex) {
  MilpModel m = SmallModel();
  EXPECT_EQ(m.VariableLabel(0), "variable 0 (\"x\")");
  EXPECT_EQ(m.VariableLabel(1), "variable 1 (\"x1\")");
  EXPECT_EQ(m.ConstraintLabel(0), "constraint 0 (\"cap\")");
  EXPECT_EQ(m.ConstraintLabel(1), "constraint 1 (\"row1\")");
}

TEST(solver_MilpModel, ValidateNamesNanCoefficient) {
  MilpModel m = SmallModel();
  m.AddConstraint({{0, 1.0}, {1, std::nan("")}}, 0, 1, "load_r3");
  const core::Status st = m.Validate();
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("load_r3"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("term 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("nan"), std::string::npos) << st.message();
}

TEST(solver_MilpModel, ValidateNamesInfiniteCoefficientAndObjective) {
  MilpModel m = SmallModel();
  m.AddConstraint({{0, kInfinity}}, 0, 1, "bad_row");
  core::Status st = m.Validate();
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("bad_row"), std::string::npos) << st.message();

  MilpModel m2 = SmallModel();
  m2.AddVariable(0, 1, std::nan(""), false, "w");
  st = m2.Validate();
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("\"w\""), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("objective"), std::string::npos) << st.message();
}

TEST(solver_MilpModel, ValidateNamesLowerAboveUpper) {
  MilpModel m = SmallModel();
  m.AddVariable(3, 2, 0, true, "count_g7");
  core::Status st = m.Validate();
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("count_g7"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("lower bound 3 > upper bound 2"), std::string::npos) << st.message();

  MilpModel m2 = SmallModel();
  m2.SetConstraintBounds(0, 4, 1);
  st = m2.Validate();
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("\"cap\""), std::string::npos) << st.message();

  MilpModel m3 = SmallModel();
  m3.SetVariableBounds(1, kInfinity, kInfinity);
  st = m3.Validate();
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("variable 1"), std::string::npos) << st.message();

  MilpModel m4 = SmallModel();
  m4.SetVariableBounds(1, std::nan(""), 1);
  EXPECT_EQ(m4.Validate().code(), StatusCode::kInvalidArgument);
}

TEST(solver_MilpModel, ValidateNamesIndexOutOfRange) {
  for (int bad : {-1, 2, 1000}) {
    MilpModel m = SmallModel();
    m.AddConstraint({{0, 1.0}, {bad, 2.0}}, 0, 1, "assign_g2");
    const core::Status st = m.Validate();
    ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("assign_g2"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("variable index " + std::to_string(bad)), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("[0, 2)"), std::string::npos) << st.message();
  }
}

TEST(solver_MilpModel, ObjectiveValueIncludesOffset) {
  MilpModel m = SmallModel();
  const std::vector<double> v = {3, 2};
  EXPECT_DOUBLE_EQ(m.ObjectiveValue(v), 3 - 4);
  m.set_objective_offset(10);
  EXPECT_DOUBLE_EQ(m.ObjectiveValue(v), 9);
  m.SetObjectiveCoef(0, 0.5);
  EXPECT_DOUBLE_EQ(m.ObjectiveValue(v), 10 + 1.5 - 4);
}

TEST(solver_MilpModel, MaxViolationFindsWorstAndIsZeroWhenFeasible) {
  MilpModel m = SmallModel();
  std::string what = "unchanged";
  EXPECT_EQ(m.MaxViolation(std::vector<double>{3, 2}, &what), 0.0);
  EXPECT_EQ(what, "");
  // x + y = 7 > 5 violates "cap" by 2 relative to 1 + |3| + |4|.
  EXPECT_NEAR(m.MaxViolation(std::vector<double>{3, 4}, &what), 2.0 / 8.0, 1e-12);
  EXPECT_NE(what.find("cap"), std::string::npos) << what;
  // x fractional.
  EXPECT_NEAR(m.MaxViolation(std::vector<double>{2.5, 1.5}, &what), 0.5 / 3.5, 1e-12);
  EXPECT_NE(what.find("not integral"), std::string::npos) << what;
  // x above its bound (the rows hold: 11 - 10 = 1, but 11 + 10 > 5; drop "cap").
  m.SetConstraintBounds(0, -kInfinity, kInfinity);
  EXPECT_NEAR(m.MaxViolation(std::vector<double>{11, 10}, &what), 1.0 / 12.0, 1e-12);
  EXPECT_NE(what.find("variable 0 (\"x\") = 11 > upper bound 10"), std::string::npos) << what;
}

TEST(solver_MilpModel, DuplicateTermsCountInViolation) {
  MilpModel m;
  const int x = m.AddVariable(0, 10, 0, false);
  m.AddConstraint({{x, 1.0}, {x, 1.0}}, 0, 4);  // 2x <= 4
  EXPECT_EQ(m.MaxViolation(std::vector<double>{2}), 0.0);
  EXPECT_GT(m.MaxViolation(std::vector<double>{3}), 0.0);
}

}  // namespace
}  // namespace tessera::solver
