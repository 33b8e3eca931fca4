// `tessera elaswave comm-bench` end to end on 4 real processes: after the kill every change
// (in place, partial, full and, when built, Gloo) reports a figure, every survivor's collectives
// were correct, and the JSON holds the summary; a survivor whose check fails fails the command;
// bad input is refused with exit 1 and one line naming the flag. Correctness only: no figure is
// compared with a time.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "cli/cli_test_util.h"
#include "core/json_util.h"
#include "elaswave/comm_bench.h"

namespace tessera::cli {
namespace {

using testing::ExpectUserError;
using testing::Result;
using testing::RunTessera;
using testing::TempPath;

std::vector<std::string> CommBenchCliModes() {
  std::vector<std::string> modes = {"inplace", "partial", "full"};
  if (elaswave::CommBenchHasGloo()) modes.push_back("gloo");
  return modes;
}

std::string CommBenchCliModeFlag() {
  std::string flag;
  for (const std::string& m : CommBenchCliModes()) flag += (flag.empty() ? "" : ",") + m;
  return flag;
}

TEST(ElasWaveCommBenchCli, EveryChangeAfterAKillReportsAFigureWithCorrectCollectives) {
  const std::string json = TempPath("comm_bench.json");
  Result r =
      RunTessera("elaswave comm-bench --ranks 4 --repeats 1 --quiet --mode " +
                 CommBenchCliModeFlag() + " --json " + json + " --run-dir " + TempPath("run"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("every survivor's collectives were correct: 1 repetitions"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("measured on this machine"), std::string::npos) << r.out;
  auto j = core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["kind"], "measured");
  const core::Json& summary = (*j)["summary"];
  ASSERT_EQ(summary.size(), CommBenchCliModes().size() + 2) << summary.dump();
  EXPECT_EQ(summary[0]["mode"], "detect");
  // A figure is reported (a number; its size is the benchmark's business, not this test's).
  EXPECT_TRUE(summary[0]["p50_s"].is_number()) << summary.dump();
  EXPECT_EQ(summary[1]["mode"], "steady");
  EXPECT_TRUE(summary[1]["p50_s"].is_number()) << summary.dump();
  for (size_t i = 0; i < CommBenchCliModes().size(); ++i) {
    const core::Json& row = summary[i + 2];
    EXPECT_EQ(row["mode"], CommBenchCliModes()[i]);
    EXPECT_EQ(row["ranks"], 4);
    EXPECT_EQ(row["repetitions"], 1);
    EXPECT_TRUE(row["p50_s"].is_number()) << row.dump();
    EXPECT_TRUE(row["call_p50_s"].is_number()) << row.dump();
    EXPECT_TRUE(row["ratio_to_inplace"].is_number()) << row.dump();
    // The table names it too.
    EXPECT_NE(r.out.find(" " + CommBenchCliModes()[i] + " "), std::string::npos) << r.out;
  }
  // Three survivors each reported every change.
  const core::Json& rep = (*j)["repetitions"][0];
  for (const std::string& m : CommBenchCliModes()) {
    EXPECT_EQ(rep["per_survivor_seconds"][m].size(), 3u) << rep.dump();
  }
}

TEST(ElasWaveCommBenchCli, AWrongSumAtAnySurvivorFailsTheCommand) {
  // The peers' test hook: the lowest survivor adds 1000 after the partial rebuild.
  ::setenv("TESSERA_COMM_BENCH_BAD_SUM_AFTER", "partial", 1);
  Result r = RunTessera(
      "elaswave comm-bench --ranks 3 --repeats 1 --quiet --mode inplace,partial"
      " --run-dir " +
      TempPath("run"));
  ::unsetenv("TESSERA_COMM_BENCH_BAD_SUM_AFTER");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("after RebuildPartial: AllReduceSum gave"), std::string::npos) << r.out;
}

TEST(ElasWaveCommBenchCli, BadInputIsRefusedBeforeAnyProcessStarts) {
  ExpectUserError("elaswave comm-bench --ranks 2", "--ranks");
  ExpectUserError("elaswave comm-bench --ranks 8,65", "--ranks");
  ExpectUserError("elaswave comm-bench --ranks 4 --mode inplace,restart", "--mode: got 'restart'");
  ExpectUserError("elaswave comm-bench --ranks 4 --repeats 0", "--repeats");
  if (!elaswave::CommBenchHasGloo()) {
    ExpectUserError("elaswave comm-bench --ranks 4 --mode gloo", "install libgloo-dev");
  }
}

}  // namespace
}  // namespace tessera::cli
