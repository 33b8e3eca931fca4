#include "kernels/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "core/rng.h"
#include "kernels/kernels_test_util.h"

namespace tessera::kernels {
namespace {

using testing::AvailableBackends;
using testing::MaxRelErr;
using testing::RandomNormal;
using testing::ScopedGemmBackend;

struct GemmCase {
  int64_t m, n, k;
  float alpha, beta;
  int64_t pad;  // extra elements per row beyond the minimum leading dimension
};

TEST(KernelsGemmTest, MatchesNaiveForAllTransposeCombos) {
  ASSERT_TRUE(SetBlasNumThreads(1).ok());
  const GemmCase cases[] = {
      {1, 1, 1, 1.0f, 0.0f, 0},        {7, 5, 3, 1.0f, 0.0f, 0},
      {33, 17, 65, 0.5f, 1.0f, 3},     {64, 128, 96, 1.0f, -0.5f, 1},
      {129, 63, 257, -2.0f, 0.25f, 5}, {256, 128, 512, 0.125f, 1.0f, 0},
  };
  core::Rng rng(42);
  for (GemmBackend backend : AvailableBackends()) {
    ScopedGemmBackend scoped(backend);
    for (const GemmCase& c : cases) {
      for (Transpose ta : {Transpose::kNo, Transpose::kYes}) {
        for (Transpose tb : {Transpose::kNo, Transpose::kYes}) {
          const int64_t a_rows = ta == Transpose::kNo ? c.m : c.k;
          const int64_t a_cols = ta == Transpose::kNo ? c.k : c.m;
          const int64_t b_rows = tb == Transpose::kNo ? c.k : c.n;
          const int64_t b_cols = tb == Transpose::kNo ? c.n : c.k;
          const int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.n + c.pad;
          const std::vector<float> a = RandomNormal(rng, a_rows * lda);
          const std::vector<float> b = RandomNormal(rng, b_rows * ldb);
          std::vector<float> c_blas = RandomNormal(rng, c.m * ldc);
          std::vector<float> c_ref = c_blas;
          ASSERT_TRUE(Gemm(ta, tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta,
                           c_blas.data(), ldc)
                          .ok());
          ASSERT_TRUE(GemmReference(ta, tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb,
                                    c.beta, c_ref.data(), ldc)
                          .ok());
          EXPECT_LT(MaxRelErr(c_blas, c_ref), 1e-5)
              << "m=" << c.m << " n=" << c.n << " k=" << c.k << " ta=" << (ta == Transpose::kYes)
              << " tb=" << (tb == Transpose::kYes) << " backend " << GemmBackendName(backend);
        }
      }
    }
  }
}

TEST(KernelsGemmTest, BetaZeroIgnoresNanInC) {
  for (GemmBackend backend : AvailableBackends()) {
    ScopedGemmBackend scoped(backend);
    core::Rng rng(1);
    const std::vector<float> a = RandomNormal(rng, 4 * 3), b = RandomNormal(rng, 3 * 5);
    std::vector<float> c(4 * 5, std::numeric_limits<float>::quiet_NaN());
    ASSERT_TRUE(Gemm(Transpose::kNo, Transpose::kNo, 4, 5, 3, 1.0f, a.data(), 3, b.data(), 5, 0.0f,
                     c.data(), 5)
                    .ok());
    for (float x : c) EXPECT_TRUE(std::isfinite(x)) << GemmBackendName(backend);
  }
}

TEST(KernelsGemmTest, EmptyInnerDimensionScalesC) {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  ASSERT_TRUE(
      Gemm(Transpose::kNo, Transpose::kNo, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2)
          .ok());
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  std::vector<float> nan_c(4, std::numeric_limits<float>::quiet_NaN());
  ASSERT_TRUE(Gemm(Transpose::kNo, Transpose::kNo, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f,
                   nan_c.data(), 2)
                  .ok());
  EXPECT_EQ(nan_c, (std::vector<float>(4, 0.0f)));
  // m == 0 or n == 0: nothing to do, null C is fine.
  EXPECT_TRUE(
      Gemm(Transpose::kNo, Transpose::kNo, 0, 3, 2, 1.0f, nullptr, 2, nullptr, 3, 0.0f, nullptr, 3)
          .ok());
}

TEST(KernelsGemmTest, InvalidArgumentsReturnStatusNamingTheField) {
  std::vector<float> a(16), b(16), c(16);
  core::Status st = Gemm(Transpose::kNo, Transpose::kNo, -1, 2, 2, 1.0f, a.data(), 2, b.data(), 2,
                         0.0f, c.data(), 2);
  EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("gemm.m"), std::string::npos) << st.message();

  st = Gemm(Transpose::kNo, Transpose::kNo, 2, 2, 4, 1.0f, a.data(), 3, b.data(), 2, 0.0f, c.data(),
            2);
  EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("gemm.lda"), std::string::npos) << st.message();

  st = Gemm(Transpose::kNo, Transpose::kYes, 2, 4, 2, 1.0f, a.data(), 2, b.data(), 1, 0.0f,
            c.data(), 4);
  EXPECT_NE(st.message().find("gemm.ldb"), std::string::npos) << st.message();

  st = Gemm(Transpose::kNo, Transpose::kNo, 2, 4, 2, 1.0f, a.data(), 2, b.data(), 4, 0.0f, c.data(),
            3);
  EXPECT_NE(st.message().find("gemm.ldc"), std::string::npos) << st.message();

  st = Gemm(Transpose::kNo, Transpose::kNo, 2, 2, 2, 1.0f, nullptr, 2, b.data(), 2, 0.0f, c.data(),
            2);
  EXPECT_NE(st.message().find("gemm.a"), std::string::npos) << st.message();

  st = GemmReference(Transpose::kYes, Transpose::kNo, 2, 2, -3, 1.0f, a.data(), 2, b.data(), 2,
                     0.0f, c.data(), 2);
  EXPECT_NE(st.message().find("gemm.k"), std::string::npos) << st.message();
}

TEST(KernelsGemmTest, BlasThreadsCanBeSetToOne) {
  ASSERT_TRUE(SetBlasNumThreads(1).ok());
  EXPECT_EQ(BlasNumThreads(), 1);
  EXPECT_EQ(SetBlasNumThreads(0).code(), core::StatusCode::kInvalidArgument);
  EXPECT_FALSE(BlasDescription().empty());
}

// The thread count holds on threads other than the caller's: a GEMM on a fresh thread runs
// with a team of one (OpenMP's team size is per thread).
TEST(KernelsGemmTest, BlasThreadsHoldOnEveryThread) {
  ASSERT_TRUE(SetBlasNumThreads(1).ok());
  int before = -1, after = -1;
  std::thread t([&] {
    std::vector<float> a(4, 1.0f), b(4, 1.0f), c(4, 0.0f);
    before = GemmThreadsOnThisThread();  // the library default on a new thread
    ASSERT_TRUE(Gemm(Transpose::kNo, Transpose::kNo, 2, 2, 2, 1.0f, a.data(), 2, b.data(), 2, 0.0f,
                     c.data(), 2)
                    .ok());
    EXPECT_EQ(c[0], 2.0f);
    after = GemmThreadsOnThisThread();
  });
  t.join();
  EXPECT_GE(before, 1);
  if (CurrentGemmBackend() == GemmBackend::kOneDnn) {
    EXPECT_EQ(after, 1);
  }
}

TEST(KernelsGemmTest, BackendSelection) {
  EXPECT_TRUE(GemmBackendAvailable(GemmBackend::kOpenBlas));
  const GemmBackend saved = CurrentGemmBackend();
  ASSERT_TRUE(SetGemmBackend(GemmBackend::kOpenBlas).ok());
  EXPECT_EQ(CurrentGemmBackend(), GemmBackend::kOpenBlas);
  if (GemmBackendAvailable(GemmBackend::kOneDnn)) {
    ASSERT_TRUE(SetGemmBackend(GemmBackend::kOneDnn).ok());
    EXPECT_EQ(CurrentGemmBackend(), GemmBackend::kOneDnn);
  } else {
    EXPECT_EQ(SetGemmBackend(GemmBackend::kOneDnn).code(), core::StatusCode::kFailedPrecondition);
    EXPECT_EQ(CurrentGemmBackend(), GemmBackend::kOpenBlas);
  }
  ASSERT_TRUE(SetGemmBackend(saved).ok());
}

}  // namespace
}  // namespace tessera::kernels
