#include "runtime/time_scale.h"

#include <gtest/gtest.h>

#include <limits>

namespace tessera::runtime {
namespace {

hw::Device TestDevice() {
  hw::Device d;
  d.name = "test-gpu";
  d.peak_flops.bf16 = 400e12;
  d.compute_efficiency = 0.5;
  return d;
}

TEST(TimeScaleTest, ScaleIsDeviceRateOverCoreRate) {
  auto t = MakeTimeScale(TestDevice(), 100e9);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_DOUBLE_EQ(t->device_flops, 200e12);
  EXPECT_DOUBLE_EQ(t->core_gemm_flops, 100e9);
  EXPECT_DOUBLE_EQ(t->scale, 2000.0);
  EXPECT_NE(t->source.find("measured: test-gpu"), std::string::npos);
}

TEST(TimeScaleTest, RefusesNonPositiveRates) {
  for (double flops : {0.0, -1.0, std::numeric_limits<double>::infinity()}) {
    auto t = MakeTimeScale(TestDevice(), flops);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find("must both be > 0"), std::string::npos);
  }
  hw::Device no_bf16 = TestDevice();
  no_bf16.peak_flops.bf16 = 0;
  EXPECT_FALSE(MakeTimeScale(no_bf16, 100e9).ok());
}

TEST(TimeScaleTest, FixedScaleIsBounded) {
  auto t = FixedTimeScale(TestDevice(), 40);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t->scale, 40.0);
  EXPECT_DOUBLE_EQ(t->core_gemm_flops, 0.0);
  EXPECT_EQ(t->source, "fixed by --time-scale");
  for (double s : {0.0, 1e-4, 2e7}) {
    auto bad = FixedTimeScale(TestDevice(), s);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("time_scale: got"), std::string::npos);
  }
}

TEST(TimeScaleTest, MeasuresAPositiveCoreRate) {
  auto flops = MeasureCoreGemmFlops(64, 1);
  ASSERT_TRUE(flops.ok()) << flops.status().ToString();
  EXPECT_GT(*flops, 0);
  EXPECT_FALSE(MeasureCoreGemmFlops(8, 1).ok());
  EXPECT_FALSE(MeasureCoreGemmFlops(64, 0).ok());
}

}  // namespace
}  // namespace tessera::runtime
