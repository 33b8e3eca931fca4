// `tessera kernelflume trace gen|stats` end to end: a generated trace read back by stats, the
// released Mooncake traces in data/traces, and bad traces refused with exit 1 and one line
// naming the line and the field.
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_test_util.h"
#include "core/json_util.h"

namespace tessera::cli {
namespace {

using testing::ExpectUserError;
using testing::ReadWhole;
using testing::Result;
using testing::RunTessera;
using testing::TempPath;
using testing::Write;

const std::string kTraces = std::string(TESSERA_DATA_ROOT) + "/../traces/";

TEST(KernelFlumeTraceCli, GenWritesTheSameBytesForASeedAndStatsReadsThem) {
  const std::string a = TempPath("a.jsonl"), b = TempPath("b.jsonl");
  const std::string args =
      "kernelflume trace gen --kind tracelab-like --seed 3 --sessions 5 "
      "--mean-turns 4 --out ";
  Result r = RunTessera(args + a);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("prefix (the context so far)"), std::string::npos) << r.out;
  ASSERT_EQ(RunTessera(args + b).code, 0);
  EXPECT_FALSE(ReadWhole(a).empty());
  EXPECT_EQ(ReadWhole(a), ReadWhole(b));

  const std::string json = TempPath("stats.json");
  Result s = RunTessera("kernelflume trace stats --trace " + a + " --json " + json);
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("prefix reuse"), std::string::npos) << s.out;
  auto j = core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["requests"].get<int64_t>(), testing::Lines(ReadWhole(a)));
}

TEST(KernelFlumeTraceCli, StatsOfTheReleasedTraces) {
  Result c =
      RunTessera("kernelflume trace stats --trace " + kTraces + "conversation_trace.jsonl.gz");
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("12031"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("36.6% (105710 of 288500"), std::string::npos) << c.out;
  Result s = RunTessera("kernelflume trace stats --trace " + kTraces + "synthetic_trace.jsonl.gz");
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("3993"), std::string::npos) << s.out;
}

TEST(KernelFlumeTraceCli, BadTracesFailWithTheLineAndField) {
  const std::string good =
      "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [0]}\n";
  ExpectUserError("kernelflume trace stats --trace " +
                      Write("neg.jsonl", good + "{\"timestamp\": 6, \"input_length\": -3, "
                                                "\"output_length\": 2, \"hash_ids\": [0]}\n"),
                  "line 2: input_length: got -3");
  ExpectUserError("kernelflume trace stats --trace " +
                      Write("order.jsonl", good + "{\"timestamp\": 4, \"input_length\": 10, "
                                                  "\"output_length\": 2, \"hash_ids\": [1]}\n"),
                  "line 2: timestamp: got 4, must be >= 5");
  const std::string extra =
      Write("extra.jsonl",
            good +
                "{\"timestamp\": 6, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [1], "
                "\"tool\": 1}\n");
  ExpectUserError("kernelflume trace stats --trace " + extra, "line 2: tool: unknown key");
  EXPECT_EQ(RunTessera("kernelflume trace stats --lenient --trace " + extra).code, 0);
  ExpectUserError("kernelflume trace stats --trace " + Write("bad.jsonl", good + "{oops\n"),
                  "line 2: malformed JSON");
  ExpectUserError("kernelflume trace gen --sessions 0 --out " + TempPath("x.jsonl"), "--sessions");
}

}  // namespace
}  // namespace tessera::cli
