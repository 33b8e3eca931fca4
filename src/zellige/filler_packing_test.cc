#include "zellige/filler_packing.h"

#include <gtest/gtest.h>

namespace tessera::zellige {
namespace {

TEST(FillerPackingTest, FollowsBudgetsAndMemory) {
  // Two ranks with budgets 10 and 4; fillers of 4, 3, 3 s and 1 byte each, cap 10 bytes.
  std::vector<double> budget = {10, 4}, mem = {0, 0};
  auto r = PackFillers({{0, 4, 1}, {1, 3, 1}, {2, 3, 1}}, budget, mem, 10);
  ASSERT_TRUE(r.ok());
  // F = 10/2 = 5. Filler 0 (4 s): rank 0 score min(6/5, 9/10) = 0.9, rank 1 min(0, .9) = 0
  // -> rank 0. Filler 1 (3 s): rank 0 min(3/5, .8) = .6; rank 1 min(1/5, .9) = .2 -> 0.
  // Filler 2: rank 0 min(0, .7) = 0; rank 1 .2 -> rank 1.
  EXPECT_EQ(*r, (std::vector<int>{0, 0, 1}));
  EXPECT_DOUBLE_EQ(mem[0], 2);
}

TEST(FillerPackingTest, MemoryDecidesAndFailsClearly) {
  std::vector<double> budget = {10, 10}, mem = {9, 0};
  auto r = PackFillers({{0, 1, 2}}, budget, mem, 10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0], 1);  // rank 0 has 1 byte of headroom only
  std::vector<double> full = {9, 9};
  auto f = PackFillers({{5, 1, 2}}, budget, full, 10);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("planning failed: filler sequence 5"), std::string::npos);
}

}  // namespace
}  // namespace tessera::zellige
