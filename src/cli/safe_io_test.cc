// Safe input and output end to end (issue classes: crash, data loss, memory, late failure,
// nonsense accepted, unclear message): every case exits 1 with one line, or works, and no
// input or unrelated file is ever changed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli_test_util.h"
#include "core/json_util.h"

namespace {

namespace fs = std::filesystem;
using tessera::cli::testing::ExpectUserError;
using tessera::cli::testing::Lines;
using tessera::cli::testing::ReadWhole;
using tessera::cli::testing::Result;
using tessera::cli::testing::RunTessera;
using tessera::cli::testing::TempPath;
using tessera::cli::testing::Write;

std::string ClusterFile() {
  return Write("cluster.json", ReadWhole(std::string(TESSERA_DATA_ROOT) + "/clusters/a800x8.json"));
}

// Saves a batch and a plan for a800x8 (usp) and returns their paths.
std::pair<std::string, std::string> BatchAndPlan() {
  const std::string batch = TempPath("batch.json"), plan = TempPath("plan.json");
  Result r = RunTessera("zellige plan --cluster a800x8 --load low --planner usp --save-batch " +
                        batch + " --save-plan " + plan);
  EXPECT_EQ(r.code, 0) << r.out;
  return {batch, plan};
}

TEST(SafeIoTest, CrashClassesAreOneLine) {
  ExpectUserError("zellige plan --cluster " + Write("c.json", "{\"name\": 1e400}"),
                  "number out of range: '1e400'");
  const std::string loop = TempPath("loop");
  fs::remove(loop);
  fs::create_symlink(loop, loop);
  ExpectUserError("zellige plan --cluster " + loop, "too many levels of symbolic links");
  ExpectUserError("zellige plan --cluster " + std::string(300, 'x'), "cluster: got");
  ExpectUserError("zellige simulate --batch " + std::string(5000, 'y') + " --plan p.json",
                  "file name too long");
  ExpectUserError("zellige run --op-timeout nan", "--op-timeout: got 'nan'");
  ExpectUserError("zellige run --op-timeout -1", "--op-timeout: got '-1'");
}

TEST(SafeIoTest, OutputsNeverDestroyInputs) {
  const std::string cluster = ClusterFile();
  const std::string before = ReadWhole(cluster);
  ExpectUserError("zellige plan --cluster " + cluster + " --json " + cluster,
                  "is also the input of --cluster");
  EXPECT_EQ(ReadWhole(cluster), before);
  auto [batch, plan] = BatchAndPlan();
  const std::string batch_text = ReadWhole(batch), plan_text = ReadWhole(plan);
  ExpectUserError(
      "zellige simulate --cluster a800x8 --batch " + batch + " --plan " + plan + " --json " + plan,
      "is also the input of --plan");
  ExpectUserError("zellige simulate --cluster a800x8 --batch " + batch + " --plan " + plan +
                      " --trace " + batch,
                  "is also the input of --batch");
  ExpectUserError("zellige plan --cluster a800x8 --workload " + batch + " --save-batch " + batch,
                  "is also the input of --workload");
  // Through a symlink to an input: the same file.
  const std::string link = TempPath("link_to_plan.json");
  fs::remove(link);
  fs::create_symlink(plan, link);
  ExpectUserError(
      "zellige simulate --cluster a800x8 --batch " + batch + " --plan " + plan + " --json " + link,
      "is also the input of --plan");
  EXPECT_EQ(ReadWhole(batch), batch_text);
  EXPECT_EQ(ReadWhole(plan), plan_text);
  const std::string profile = std::string(TESSERA_ZELLIGE_TESTDATA) + "/profile_2rank.json";
  ExpectUserError("zellige validate --profile " + profile + " --json " + profile,
                  "is also the input of --profile");
  // Two outputs on one file.
  const std::string out = TempPath("same.json");
  ExpectUserError(
      "zellige plan --cluster a800x8 --planner usp --json " + out + " --save-plan " + out,
      "is also the output of --json");
  EXPECT_FALSE(fs::exists(out));
}

TEST(SafeIoTest, DevicesSymlinksAndForeignTempFiles) {
  // A symlinked output is written through; the link stays a link.
  const std::string target = Write("target.json", "old");
  const std::string link = TempPath("out_link.json");
  fs::remove(link);
  fs::create_symlink(target, link);
  const std::string user_tmp = Write("out_link.json.tmp", "the user's own file");
  Result r = RunTessera("zellige plan --cluster a800x8 --load low --planner usp --json " + link);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_NE(ReadWhole(target), "old");
  EXPECT_TRUE(tessera::core::ParseJson(ReadWhole(target), target).ok());
  EXPECT_EQ(ReadWhole(user_tmp), "the user's own file");
  // /dev/null stays a device.
  r = RunTessera("zellige plan --cluster a800x8 --load low --planner usp --json /dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // /dev/full: the write fails as a full disk would, with one line after the table.
  if (fs::exists("/dev/full")) {
    r = RunTessera("zellige plan --cluster a800x8 --load low --planner usp --json /dev/full");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("tessera: /dev/full: write failed: No space left on device"),
              std::string::npos)
        << r.out;
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
}

TEST(SafeIoTest, OutputProblemsAreFoundBeforeTheWork) {
  ExpectUserError("zellige plan --json " + ::testing::TempDir(), "is a directory");
  ExpectUserError("zellige plan --json /nonexistent_dir/x.json", "does not exist");
  // The profiler refuses its --out before starting MPI and measuring.
  ExpectUserError("zellige profile --out /nonexistent_dir/p.json", "does not exist");
  ExpectUserError("zellige profile --out " + ::testing::TempDir(), "is a directory");
  ExpectUserError("zellige plan --json ''", "--json: empty path");
}

TEST(SafeIoTest, UnclearInputsAreNamed) {
  ExpectUserError("zellige plan --cluster /dev/null", "/dev/null: is a device");
  ExpectUserError("zellige plan --cluster " + Write("empty.json", ""), "empty.json: is empty");
  const std::string dir = TempPath("a_dir.json");
  fs::create_directories(dir);
  ExpectUserError("zellige plan --cluster " + dir, "is a directory");
  ExpectUserError("zellige simulate --batch /nonexistent.json --plan x", "no such file");
}

TEST(SafeIoTest, NonsenseIsRefused) {
  ExpectUserError("zellige plan --seed -1", "--seed: got '-1'");
  ExpectUserError("zellige plan --video-seconds 1e-300 --planner usp",
                  "--video-seconds: got '1e-300'");
  ExpectUserError("zellige plan --video-seconds nan", "--video-seconds: got 'nan'");
  ExpectUserError("zellige bench-planner --joint-time-limit inf", "--joint-time-limit: got 'inf'");
  ExpectUserError("zellige plan --option zellige.time_limt_s=3", "must be one of");
  ExpectUserError("zellige tokens --seconds 1e-300", "less than one frame");
  ExpectUserError("zellige plan --cluster " + Write("dup.json", "{\"name\": \"a\", \"name\": 2}"),
                  "name: duplicate key");
  ExpectUserError("zellige plan --load 9999999999 --planner usp", "use a smaller load");
}

TEST(SafeIoTest, InputSizeLimitSaysHowToRaiseIt) {
  const std::string big = Write("big.json", "[" + std::string(2 << 20, ' ') + "]");
  Result r = RunTessera("zellige plan --workload " + big);  // default limit: far above 2 MB
  EXPECT_EQ(r.out.find("size limit"), std::string::npos) << r.out;
  const std::string cmd = std::string("env TESSERA_MAX_INPUT_MB=1 ") + TESSERA_BIN +
                          " zellige plan --workload " + big + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  EXPECT_EQ(WEXITSTATUS(st), 1) << out;
  EXPECT_EQ(Lines(out), 1) << out;
  EXPECT_NE(out.find("over the input size limit of 1.0 MB ($TESSERA_MAX_INPUT_MB)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("set TESSERA_MAX_INPUT_MB"), std::string::npos) << out;
}

}  // namespace
