#include "runtime/compute_context.h"

#include <gtest/gtest.h>

#include <vector>

#include "comm/futex.h"
#include "core/rng.h"
#include "kernels/gemm.h"

namespace tessera::runtime {
namespace {

struct Operands {
  int64_t m = 24, n = 40, k = 32;
  std::vector<float> a, b;
  explicit Operands(uint64_t seed) {
    core::Rng rng(seed);
    a.resize(static_cast<size_t>(m * k));
    b.resize(static_cast<size_t>(k * n));
    for (float& v : a) v = static_cast<float>(rng.Uniform(-1, 1));
    for (float& v : b) v = static_cast<float>(rng.Uniform(-1, 1));
  }
  std::vector<float> Reference(bool accumulate, const std::vector<float>& c0) const {
    std::vector<float> c = c0;
    EXPECT_TRUE(kernels::Gemm(kernels::Transpose::kNo, kernels::Transpose::kNo, m, n, k, 1.0f,
                              a.data(), k, b.data(), n, accumulate ? 1.0f : 0.0f, c.data(), n)
                    .ok());
    return c;
  }
};

TEST(ComputeContext, ModeNamesRoundTripAndBadNamesAreRefused) {
  for (ComputeMode m : {ComputeMode::kReal, ComputeMode::kModeled, ComputeMode::kRecord,
                        ComputeMode::kSleepToSpeed}) {
    auto parsed = ParseComputeMode(ComputeModeName(m));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, m);
  }
  auto bad = ParseComputeMode("emulated");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "compute: got 'emulated', must be real, modeled, record or sleep-to-speed");
}

// kReal and kSleepToSpeed write exactly kernels::Gemm's result, with and without accumulate.
TEST(ComputeContext, RealAndSleepToSpeedEqualTheKernel) {
  const Operands x(3);
  const std::vector<float> c0(static_cast<size_t>(x.m * x.n), 0.5f);
  for (ComputeMode mode : {ComputeMode::kReal, ComputeMode::kSleepToSpeed}) {
    for (bool accumulate : {false, true}) {
      ComputeContext ctx;
      ctx.set_mode(mode);
      ASSERT_TRUE(ctx.set_speed(0.5).ok());
      std::vector<float> c = c0;
      ASSERT_TRUE(ctx.Gemm(false, x.m, x.n, x.k, x.a.data(), x.k, x.b.data(), x.n, accumulate,
                           c.data(), x.n)
                      .ok());
      EXPECT_EQ(c, x.Reference(accumulate, c0)) << ComputeModeName(mode);
    }
  }
}

// At speed s a call lasts at least (its compute) / s: a lower bound, which sleeping guarantees.
TEST(ComputeContext, SleepToSpeedStretchesTheCall) {
  const Operands x(5);
  std::vector<float> c(static_cast<size_t>(x.m * x.n));
  ComputeContext ctx;
  ctx.set_mode(ComputeMode::kSleepToSpeed);
  ASSERT_TRUE(ctx.set_speed(0.01).ok());
  const int64_t t0 = comm::NowNs();
  ASSERT_TRUE(
      ctx.Gemm(false, x.m, x.n, x.k, x.a.data(), x.k, x.b.data(), x.n, false, c.data(), x.n).ok());
  const int64_t took_ns = comm::NowNs() - t0;
  // The GEMM alone takes at least a microsecond here; at 1% speed the call lasts 100x that.
  EXPECT_GE(took_ns, 100'000);
  EXPECT_FALSE(ctx.set_speed(0).ok());
  EXPECT_FALSE(ctx.set_speed(1.5).ok());
  EXPECT_EQ(ctx.speed(), 0.01);
}

TEST(ComputeContext, RecordKeepsShapesAndLeavesTheOutput) {
  ComputeContext ctx;
  ctx.set_mode(ComputeMode::kRecord);
  std::vector<float> c(4, 7.0f);
  ASSERT_TRUE(ctx.Gemm(true, 2, 2, 3, nullptr, 2, nullptr, 2, false, c.data(), 2).ok());
  ASSERT_TRUE(ctx.Gemm(false, 4, 5, 6, nullptr, 6, nullptr, 5, true, nullptr, 5).ok());
  EXPECT_EQ(c, std::vector<float>(4, 7.0f));
  const std::vector<GemmShape> got = ctx.TakeRecorded();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (GemmShape{true, 2, 2, 3}));
  EXPECT_EQ(got[1], (GemmShape{false, 4, 5, 6}));
  EXPECT_TRUE(ctx.TakeRecorded().empty());
}

TEST(ComputeContext, ModeledSleepsItsProfiledTimeAndNamesAMissingShape) {
  GemmProfile profile;
  profile[GemmShape{false, 8, 8, 8}] = 2e-3;
  ComputeContext ctx;
  ctx.set_mode(ComputeMode::kModeled);
  auto missing = ctx.Gemm(false, 8, 8, 8, nullptr, 8, nullptr, 8, false, nullptr, 8);
  ASSERT_FALSE(missing.ok());  // no profile yet
  ctx.set_profile(&profile);
  const int64_t t0 = comm::NowNs();
  ASSERT_TRUE(ctx.Gemm(false, 8, 8, 8, nullptr, 8, nullptr, 8, false, nullptr, 8).ok());
  EXPECT_GE(comm::NowNs() - t0, 2'000'000);
  auto other = ctx.Gemm(true, 8, 8, 9, nullptr, 8, nullptr, 8, false, nullptr, 8);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.message(),
            "modeled compute: no profiled time for a GEMM of m 8 n 8 k 9 (A transposed)");
}

TEST(ComputeContext, ProfileGemmsTimesEachShapeOnce) {
  const std::vector<GemmShape> shapes = {
      {false, 16, 16, 16}, {true, 8, 16, 4}, {false, 16, 16, 16}};
  auto p = ProfileGemms(shapes, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->size(), 2u);
  for (const auto& [shape, seconds] : *p) EXPECT_GT(seconds, 0) << shape.m;
}

}  // namespace
}  // namespace tessera::runtime
