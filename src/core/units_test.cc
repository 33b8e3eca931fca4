#include "core/units.h"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

TEST(UnitsTest, BinaryAndDecimalSizes) {
  static_assert(kKiB == 1024.0 && kMiB == 1048576.0 && kGiB == 1073741824.0);
  static_assert(kKB == 1000.0 && kMB == 1000000.0 && kGB == 1000000000.0);
  static_assert(kKiBInt64 == 1024 && kMiBInt64 == 1048576 && kGiBInt64 == 1073741824);
  EXPECT_EQ(80 * kGiB, 85899345920.0);
  EXPECT_EQ(static_cast<double>(kGiBInt64), kGiB);
  EXPECT_EQ(kGiB / kMiB, 1024.0);
}

}  // namespace
}  // namespace tessera::core
