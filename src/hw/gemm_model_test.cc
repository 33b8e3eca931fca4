#include "hw/gemm_model.h"

#include <gtest/gtest.h>

#include "hw/device.h"

namespace tessera::hw {
namespace {

TEST(GemmModel, WavesQuantiseAndBandwidthFloors) {
  auto preset = DevicePreset("rtx-a6000-48gb");
  ASSERT_TRUE(preset.ok()) << preset.status().ToString();
  Device d = *preset;
  ASSERT_GT(d.sm_count, 0);
  const int64_t sms = d.sm_count;
  // sms tiles of 128 x 128: one wave; one more tile: two.
  const double one = ModeledGemmSeconds(d, 128 * sms, 128, 8192);
  const double two = ModeledGemmSeconds(d, 128 * sms + 1, 128, 8192);
  EXPECT_NEAR(two, 2 * one, 1e-12);
  EXPECT_NEAR(one,
              2.0 * 128 * 128 * 8192 / (d.PeakFlops(Dtype::kBF16) * d.compute_efficiency / sms),
              1e-12);
  // One row still occupies whole 128-row tiles: as slow as 128 rows.
  EXPECT_DOUBLE_EQ(ModeledGemmSeconds(d, 1, 8192, 8192), ModeledGemmSeconds(d, 128, 8192, 8192));
  EXPECT_EQ(ModeledGemmSeconds(d, 0, 1, 1), 0);
  d.sm_count = 0;  // no SM count: FLOPs over the achieved peak, at least the bytes
  EXPECT_NEAR(ModeledGemmSeconds(d, 1, 8192, 8192),
              2.0 * (8192.0 + 8192.0 * 8192 + 8192) / d.mem_bw_bytes_per_s, 1e-12);
  EXPECT_NEAR(ModeledGemmSeconds(d, 4096, 4096, 4096),
              2.0 * 4096 * 4096 * 4096 / (d.PeakFlops(Dtype::kBF16) * d.compute_efficiency), 1e-12);
}

// The plain roofline ignores the SM count: a 1-row GEMM costs its bytes, not a 128-row tile.
TEST(GemmModel, RooflineIsFlopsOrBytesWhicheverIsSlower) {
  auto preset = DevicePreset("h100-sxm5-80gb");
  ASSERT_TRUE(preset.ok()) << preset.status().ToString();
  const Device d = *preset;
  ASSERT_GT(d.sm_count, 0);
  const double bytes_s = 2.0 * (4096.0 + 4096.0 * 14336 + 14336) / d.mem_bw_bytes_per_s;
  EXPECT_NEAR(RooflineGemmSeconds(d, 1, 14336, 4096), bytes_s, 1e-15);
  EXPECT_LT(RooflineGemmSeconds(d, 1, 14336, 4096), ModeledGemmSeconds(d, 1, 14336, 4096));
  const double achieved = d.PeakFlops(Dtype::kBF16) * d.compute_efficiency;
  EXPECT_NEAR(RooflineGemmSeconds(d, 8192, 8192, 8192), 2.0 * 8192 * 8192 * 8192 / achieved, 1e-12);
  EXPECT_EQ(RooflineGemmSeconds(d, 0, 5, 5), 0);
}

}  // namespace
}  // namespace tessera::hw
