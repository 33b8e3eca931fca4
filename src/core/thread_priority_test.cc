#include "core/thread_priority.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tessera::core {
namespace {

TEST(ThreadPriorityTest, RunsTheWorkOnALowerPriorityThreadOnly) {
  const StatusOr<int> mine = ThisThreadNice();
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  int seen = -100;
  const Status st = RunAtLowerPriority(5, [&]() -> Status {
    ASSIGN_OR_RETURN(seen, ThisThreadNice());
    return NotFound("the work's own status");
  });
  EXPECT_EQ(st.code(), StatusCode::kNotFound);  // the work's Status comes back as it is
  EXPECT_EQ(seen, std::min(*mine + 5, 19));
  EXPECT_EQ(*ThisThreadNice(), *mine);  // the caller's priority is untouched
}

TEST(ThreadPriorityTest, ZeroRunsOnTheCallingThread) {
  int seen = -100;
  EXPECT_TRUE(RunAtLowerPriority(0, [&]() -> Status {
                seen = *ThisThreadNice();
                return Status::Ok();
              }).ok());
  EXPECT_EQ(seen, *ThisThreadNice());
}

TEST(ThreadPriorityTest, RejectsIncrementsOutsideTheNiceRange) {
  bool ran = false;
  const Status st = RunAtLowerPriority(-1, [&]() -> Status {
    ran = true;
    return Status::Ok();
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ran);
  EXPECT_EQ(LowerThisThreadPriority(40).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::core
