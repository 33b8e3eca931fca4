// FastExp against std::exp (in double) on seeded inputs: the accuracy contract of
// fast_exp.h for both degrees, and the behaviour outside [-87, 88].
#include "kernels/fast_exp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/rng.h"

namespace tessera::kernels {
namespace {

template <int kDegree, ExpUnderflow kUnderflow>
double MaxRelError(uint64_t seed, double lo, double hi, int n) {
  core::Rng rng(seed);
  double worst = 0.0;
  for (int i = 0; i < n; ++i) {
    const float x = static_cast<float>(rng.Uniform(lo, hi));
    const double want = std::exp(static_cast<double>(x));
    const double got = FastExp<kDegree, kUnderflow>(x);
    worst = std::max(worst, std::abs(got - want) / want);
  }
  return worst;
}

TEST(FastExp, MeetsItsRelativeErrorContract) {
  for (auto [lo, hi] : {std::pair{-86.0, 88.0}, std::pair{-1.0, 1.0}, std::pair{-20.0, 0.0}}) {
    EXPECT_LE((MaxRelError<7, ExpUnderflow::kZero>(11, lo, hi, 200000)), 2e-7) << lo;
    EXPECT_LE((MaxRelError<6, ExpUnderflow::kClamp>(12, lo, hi, 200000)), 4e-7) << lo;
  }
  EXPECT_EQ(FastExp(0.0f), 1.0f);
  EXPECT_EQ((FastExp<6, ExpUnderflow::kClamp>(0.0f)), 1.0f);
}

TEST(FastExp, OutsideTheRangeClampsOrFlushes) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FastExp(-88.0f), 0.0f);
  EXPECT_EQ(FastExp(-inf), 0.0f);
  EXPECT_EQ((FastExp<6, ExpUnderflow::kClamp>(-1000.0f)),
            (FastExp<6, ExpUnderflow::kClamp>(-87.0f)));
  EXPECT_GT((FastExp<6, ExpUnderflow::kClamp>(-inf)), 0.0f);
  EXPECT_EQ(FastExp(1000.0f), FastExp(88.0f));
  EXPECT_EQ(FastExp(inf), FastExp(88.0f));
  EXPECT_TRUE(std::isnan(FastExp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan((FastExp<6, ExpUnderflow::kClamp>(std::nanf("")))));
}

}  // namespace
}  // namespace tessera::kernels
