#include "core/tensor_error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace tessera::core {
namespace {

TEST(TensorError, EqualTensorsHaveZeroError) {
  const std::vector<float> a = {1.0f, -2.0f, 0.0f};
  const ErrorStats e = CompareTensors(a, a);
  EXPECT_EQ(e.max_abs, 0.0);
  EXPECT_EQ(e.max_rel, 0.0);
}

TEST(TensorError, RelativeIsMaxDiffOverMaxReference) {
  const std::vector<float> got = {1.0f, -2.5f, 0.25f};
  const std::vector<float> ref = {1.0f, -2.0f, 4.0f};
  const ErrorStats e = CompareTensors(got, ref);
  EXPECT_DOUBLE_EQ(e.max_abs, 3.75);        // |0.25 - 4|
  EXPECT_DOUBLE_EQ(e.max_rel, 3.75 / 4.0);  // over max |ref| = 4, not element-wise
}

TEST(TensorError, AllZeroReferenceIsWellDefined) {
  const std::vector<float> zero = {0.0f, 0.0f};
  EXPECT_EQ(CompareTensors(zero, zero).max_rel, 0.0);
  const std::vector<float> got = {0.0f, 1e-20f};
  const ErrorStats e = CompareTensors(got, zero);
  EXPECT_FLOAT_EQ(static_cast<float>(e.max_abs), 1e-20f);
  EXPECT_NEAR(e.max_rel, 1e-20 / TensorError::kTinyReference, 1e3);
  EXPECT_GT(e.max_rel, 1e-5);
}

TEST(TensorError, NonFiniteValuesAreInfiniteError) {
  const std::vector<float> ref = {1.0f, 2.0f};
  const std::vector<float> nan = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  const std::vector<float> inf = {std::numeric_limits<float>::infinity(), 2.0f};
  EXPECT_TRUE(std::isinf(CompareTensors(nan, ref).max_abs));
  EXPECT_TRUE(std::isinf(CompareTensors(nan, ref).max_rel));
  EXPECT_TRUE(std::isinf(CompareTensors(inf, ref).max_rel));
  EXPECT_TRUE(std::isinf(CompareTensors(ref, nan).max_rel));
}

TEST(TensorError, AccumulatesPairsAndWorstOfTakesEachMax) {
  TensorError t;
  t.Add(1.0, 1.5);
  t.Add(std::vector<float>{3.0f}, std::vector<float>{2.0f});
  EXPECT_DOUBLE_EQ(t.Stats().max_abs, 1.0);
  EXPECT_DOUBLE_EQ(t.Stats().max_rel, 0.5);
  const ErrorStats w = WorstOf({1.0, 0.1}, {0.5, 0.2});
  EXPECT_EQ(w.max_abs, 1.0);
  EXPECT_EQ(w.max_rel, 0.2);
  EXPECT_TRUE(std::isinf(WorstOf({NAN, 0.0}, {0.0, 0.0}).max_abs));
}

}  // namespace
}  // namespace tessera::core
