#include "core/memory_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

namespace tessera::core {
namespace {

TEST(MemoryInfoTest, ResidentBytesOfThisProcessGrowsWithTouchedPages) {
  auto before = ResidentBytes(0);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_GT(*before, 0);
  auto by_pid = ResidentBytes(static_cast<int>(getpid()));
  ASSERT_TRUE(by_pid.ok());
  EXPECT_GT(*by_pid, 0);
  std::vector<char> block(64 << 20, 1);  // 64 MiB, every page written
  auto after = ResidentBytes(0);
  ASSERT_TRUE(after.ok());
  EXPECT_GT(*after, *before + (32 << 20)) << static_cast<int>(block[block.size() / 2]);
}

TEST(MemoryInfoTest, ResidentBytesOfAMissingProcessIsNotFound) {
  auto r = ResidentBytes(1 << 30);  // above any pid_max
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_GT(AvailableMemoryBytes(), 0);
}

}  // namespace
}  // namespace tessera::core
