#include "core/subprocess.h"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

TEST(SubprocessTest, ExitCodeAndStderrComeBack) {
  auto r = RunProcess({"sh", "-c", "echo first >&2; echo 'the reason' >&2; exit 3"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->stderr_text, "first\nthe reason\n");
  EXPECT_EQ(r->LastStderrLine(), "the reason");
  auto ok = RunProcess({"true"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->exit_code, 0);
  EXPECT_EQ(ok->LastStderrLine(), "");
}

TEST(SubprocessTest, ArgumentsAreNotInterpretedByAShell) {
  auto r = RunProcess({"sh", "-c", "printf '%s' \"$1\" >&2", "sh", "a b; $(false) *"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stderr_text, "a b; $(false) *");
}

TEST(SubprocessTest, KilledChildAndMissingProgram) {
  auto r = RunProcess({"sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 128 + 9);
  auto missing = RunProcess({"tessera-no-such-program-xyz"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("tessera-no-such-program-xyz"), std::string::npos);
  EXPECT_FALSE(RunProcess({}).ok());
}

TEST(SubprocessTest, LongStderrKeepsItsTail) {
  auto r = RunProcess({"sh", "-c",
                       "i=0; while [ $i -lt 20000 ]; do echo line$i >&2; "
                       "i=$((i+1)); done"});
  ASSERT_TRUE(r.ok());
  EXPECT_LE(r->stderr_text.size(), kMaxStderrBytes);
  EXPECT_EQ(r->LastStderrLine(), "line19999");
}

}  // namespace
}  // namespace tessera::core
