#include "core/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace tessera::core {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("input_file_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::unsetenv(kMaxInputEnv);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    ::unsetenv(kMaxInputEnv);
  }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(P(name), std::ios::binary) << text;
    return P(name);
  }
  static std::string Message(const StatusOr<std::string>& r) { return r.status().message(); }
  fs::path dir_;
};

TEST_F(InputFileTest, ReadsARegularFile) {
  auto r = ReadInputFile(Write("a.json", "{\"a\": 1}"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "{\"a\": 1}");
}

TEST_F(InputFileTest, NamesEveryKindOfBadPath) {
  auto missing = ReadInputFile(P("missing.json"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(Message(missing).find("no such file"), std::string::npos);
  EXPECT_NE(Message(ReadInputFile(dir_.string())).find("is a directory"), std::string::npos);
  EXPECT_NE(Message(ReadInputFile("/dev/null")).find("/dev/null: is a device"), std::string::npos);
  EXPECT_NE(Message(ReadInputFile(Write("e.json", ""))).find("is empty"), std::string::npos);
  fs::create_symlink(P("loop"), P("loop"));
  EXPECT_NE(Message(ReadInputFile(P("loop"))).find("symbolic links"), std::string::npos);
  EXPECT_NE(Message(ReadInputFile(std::string(5000, 'x'))).find("file name too long"),
            std::string::npos);
  EXPECT_NE(Message(ReadInputFile(Write("f", "x") + "/inside")).find("not a directory"),
            std::string::npos);
  EXPECT_FALSE(ReadInputFile("").ok());
}

TEST_F(InputFileTest, SizeLimitComesFromMemoryOrTheEnvironment) {
  auto limit = MaxInputBytes();
  ASSERT_TRUE(limit.ok());
  EXPECT_GE(*limit, int64_t{16} << 20);
  EXPECT_LE(*limit, int64_t{1} << 30);
  EXPECT_NE(MaxInputBytesOrigin().find("available memory"), std::string::npos);
  const std::string big = Write("big.json", std::string((1 << 20) + 1, ' '));
  ::setenv(kMaxInputEnv, "1", 1);
  auto r = ReadInputFile(big);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r).find("over the input size limit of 1.0 MB ($TESSERA_MAX_INPUT_MB)"),
            std::string::npos)
      << Message(r);
  ::setenv(kMaxInputEnv, "2", 1);
  EXPECT_TRUE(ReadInputFile(big).ok());
  for (const char* bad : {"0", "-5", "abc", "1.5", "99999999999999"}) {
    ::setenv(kMaxInputEnv, bad, 1);
    EXPECT_NE(Message(ReadInputFile(big)).find("$TESSERA_MAX_INPUT_MB: got"), std::string::npos)
        << bad;
  }
}

TEST_F(InputFileTest, FifoIsReadUpToTheLimit) {
  const std::string fifo = P("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ::setenv(kMaxInputEnv, "1", 1);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::ofstream out(fifo, std::ios::binary);
    out << std::string(3 << 20, 'x');
    ::_exit(0);
  }
  auto r = ReadInputFile(fifo);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r).find("more than the input size limit"), std::string::npos);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
}

TEST_F(InputFileTest, PathExistsNeverThrows) {
  EXPECT_TRUE(PathExists(Write("x", "1")));
  EXPECT_FALSE(PathExists(P("nope")));
  EXPECT_FALSE(PathExists(std::string(5000, 'y')));
  EXPECT_FALSE(PathExists(""));
  fs::create_symlink(P("loop2"), P("loop2"));
  EXPECT_TRUE(PathExists(P("loop2")));
}

}  // namespace
}  // namespace tessera::core
