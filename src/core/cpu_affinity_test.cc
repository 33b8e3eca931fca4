#include "core/cpu_affinity.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace tessera::core {
namespace {

TEST(CpuAffinityTest, PinsAThreadToOneAllowedCpu) {
  ASSERT_GE(OnlineCpus(), 1);
  const int last = AllowedCpu(OnlineCpus() - 1);
  ASSERT_GE(last, 0);
  EXPECT_EQ(AllowedCpu(OnlineCpus()), -1);
  EXPECT_EQ(AllowedCpu(-1), -1);
  std::thread t([last] {
    ASSERT_TRUE(PinThisThreadToCpu(last).ok());
    cpu_set_t set;
    ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
    EXPECT_EQ(CPU_COUNT(&set), 1);
    EXPECT_TRUE(CPU_ISSET(last, &set));
    EXPECT_EQ(sched_getcpu(), last);
  });
  t.join();
  EXPECT_EQ(PinThisThreadToCpu(-3).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::core
