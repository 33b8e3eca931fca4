#include "core/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace tessera::core {
namespace {

TEST(ChildProcessTest, ReportsExitCodeAndStderr) {
  auto child = ChildProcess::Spawn({"sh", "-c", "echo first >&2; echo 'the reason' >&2; exit 3"});
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ((*child)->Wait(), 3);
  EXPECT_EQ((*child)->LastStderrLine(), "the reason");
  EXPECT_EQ((*child)->Poll(), 3);
}

TEST(ChildProcessTest, SignalEndsARunningChildAndTheDestructorReapsIt) {
  auto child = ChildProcess::Spawn({"sleep", "60"});
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE((*child)->Poll().has_value());
  (*child)->Signal(SIGKILL);
  EXPECT_EQ((*child)->Wait(), 128 + SIGKILL);
  auto other = ChildProcess::Spawn({"sleep", "60"});
  ASSERT_TRUE(other.ok());
  const pid_t pid = (*other)->pid();
  other->reset();  // kills and reaps
  EXPECT_NE(kill(pid, 0), 0);
}

TEST(ChildProcessTest, AMissingProgramIsNotFound) {
  auto child = ChildProcess::Spawn({"/nonexistent/tessera-no-such-program"});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kNotFound);
  EXPECT_NE(child.status().message().find("tessera-no-such-program"), std::string::npos);
}

}  // namespace
}  // namespace tessera::core
