// Heap accounting through the operator new hooks (this test links tessera_alloc_hooks).
#include "core/alloc_stats.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace tessera::core {
namespace {

TEST(AllocStats, CountsLiveBytesAndPeak) {
  ASSERT_TRUE(AllocStatsEnabled());
  const int64_t before = AllocatedBytes();
  ResetPeakAllocatedBytes();
  {
    std::vector<float> a(1 << 20);  // 4 MiB
    EXPECT_GE(AllocatedBytes() - before, 4 << 20);
    {
      auto b = std::make_unique<double[]>(1 << 18);  // 2 MiB
      EXPECT_GE(AllocatedBytes() - before, 6 << 20);
    }
    EXPECT_LT(AllocatedBytes() - before, 5 << 20);
  }
  EXPECT_LT(AllocatedBytes() - before, 1 << 20);
  EXPECT_GE(PeakAllocatedBytes() - before, 6 << 20);
  EXPECT_LT(PeakAllocatedBytes() - before, 7 << 20);
  ResetPeakAllocatedBytes();
  EXPECT_EQ(PeakAllocatedBytes(), AllocatedBytes());
}

TEST(AllocStats, AlignedAllocationsAreCounted) {
  const int64_t before = AllocatedBytes();
  struct alignas(256) Big {
    char x[1 << 16];
  };
  auto p = std::make_unique<Big>();
  EXPECT_GE(AllocatedBytes() - before, 1 << 16);
  p.reset();
  EXPECT_LT(AllocatedBytes() - before, 1 << 12);
}

}  // namespace
}  // namespace tessera::core
