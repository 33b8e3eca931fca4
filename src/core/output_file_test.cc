#include "core/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tessera::core {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("output_file_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  int Entries() const {
    int n = 0;
    for (auto& e : fs::directory_iterator(dir_)) n += e.exists() ? 1 : 1;
    return n;
  }
  fs::path dir_;
};

TEST_F(OutputFileTest, WritesNewAndReplacesExistingKeepingMode) {
  ASSERT_TRUE(WriteFileAtomically(P("a.json"), "one").ok());
  EXPECT_EQ(Read(P("a.json")), "one");
  ::chmod(P("a.json").c_str(), 0640);
  ASSERT_TRUE(WriteFileAtomically(P("a.json"), "two").ok());
  EXPECT_EQ(Read(P("a.json")), "two");
  struct stat st;
  ASSERT_EQ(::stat(P("a.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(Entries(), 1);  // no temporary left behind
}

TEST_F(OutputFileTest, NeverTouchesTheUsersTmpFiles) {
  Write(P("a.json.tmp"), "mine");
  Write(P("a.json.tessera-XXXXXX"), "also mine");
  ASSERT_TRUE(WriteFileAtomically(P("a.json"), "out").ok());
  EXPECT_EQ(Read(P("a.json.tmp")), "mine");
  EXPECT_EQ(Read(P("a.json.tessera-XXXXXX")), "also mine");
  EXPECT_EQ(Entries(), 3);
}

TEST_F(OutputFileTest, WritesThroughSymlinks) {
  Write(P("real.json"), "old");
  fs::create_symlink("real.json", P("link.json"));
  ASSERT_TRUE(WriteFileAtomically(P("link.json"), "new").ok());
  EXPECT_TRUE(fs::is_symlink(P("link.json")));
  EXPECT_EQ(Read(P("real.json")), "new");
}

TEST_F(OutputFileTest, WritesToDevicesWithoutReplacingThem) {
  ASSERT_TRUE(WriteFileAtomically("/dev/null", "discarded").ok());
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  if (fs::exists("/dev/full")) {
    Status full = WriteFileAtomically("/dev/full", "x");
    EXPECT_EQ(full.code(), StatusCode::kInvalidArgument) << full.ToString();
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
}

TEST_F(OutputFileTest, RefusesDirectoriesAndMissingDirectories) {
  Status d = WriteFileAtomically(dir_.string(), "x");
  EXPECT_EQ(d.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.message().find("is a directory"), std::string::npos) << d.message();
  Status m = WriteFileAtomically(P("no/such/dir/a.json"), "x");
  EXPECT_EQ(m.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.message().find("does not exist"), std::string::npos) << m.message();
  EXPECT_EQ(CheckWritable("--json", "").code(), StatusCode::kInvalidArgument);
}

TEST_F(OutputFileTest, OutputOntoAnInputIsRefused) {
  Write(P("cluster.json"), "{}");
  fs::create_symlink("cluster.json", P("alias.json"));
  fs::create_hard_link(P("cluster.json"), P("hard.json"));
  for (const std::string& out : {P("cluster.json"), P("alias.json"), P("hard.json"),
                                 (dir_ / "." / "cluster.json").string()}) {
    OutputPaths paths;
    paths.Input("--cluster", P("cluster.json"));
    paths.Output("--json", out);
    Status st = paths.Check();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << out;
    EXPECT_NE(st.message().find("is also the input of --cluster"), std::string::npos)
        << st.message();
  }
  EXPECT_EQ(Read(P("cluster.json")), "{}");
}

TEST_F(OutputFileTest, TwoOutputsOnOnePathAreRefused) {
  OutputPaths paths;
  paths.Output("--json", P("x.json"));
  paths.Output("--save-plan", (dir_ / "." / "x.json").string());
  Status st = paths.Check();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("--save-plan"), std::string::npos) << st.message();
  OutputPaths devices;  // the same device twice is fine
  devices.Output("--json", "/dev/null");
  devices.Output("--trace", "/dev/null");
  EXPECT_TRUE(devices.Check().ok());
}

TEST_F(OutputFileTest, CheckAcceptsDistinctWritableOutputsAndIgnoresEmptyOnes) {
  Write(P("in.json"), "{}");
  OutputPaths paths;
  paths.Input("--batch", P("in.json"));
  paths.Input("--plan", "");
  paths.Output("--json", P("out.json"));
  paths.Output("--trace", "");
  EXPECT_TRUE(paths.Check().ok());
  paths.Output("--save-batch", dir_.string());
  EXPECT_EQ(paths.Check().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::core
