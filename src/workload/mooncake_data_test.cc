// The released Mooncake traces kept in data/traces parse, with the counts observed when they
// were added (data/traces/README.md), and write back to the same bytes.
#include <gtest/gtest.h>

#include <string>

#include "core/input_file.h"
#include "workload/gzip_text.h"
#include "workload/request_trace.h"
#include "workload/trace_stats.h"

namespace tessera::workload {
namespace {

struct Expected {
  const char* file;
  int64_t requests, last_ms, input_tokens, output_tokens, blocks, reused;
};

TEST(MooncakeData, ReleasedTracesParseWithTheirCounts) {
  for (const Expected& e :
       {Expected{"conversation_trace.jsonl.gz", 12031, 3536999, 144793823, 4122048, 288500, 105710},
        Expected{"synthetic_trace.jsonl.gz", 3993, 1022025, 61194628, 595432, 121877, 77953}}) {
    const std::string path = std::string(TESSERA_TRACE_DATA_DIR) + "/" + e.file;
    auto trace = ReadMooncakeTrace(path, {});
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    const TraceStats s = ComputeTraceStats(*trace);
    EXPECT_EQ(s.requests, e.requests) << e.file;
    EXPECT_EQ(trace->front().timestamp_ms, 0) << e.file;
    EXPECT_EQ(trace->back().timestamp_ms, e.last_ms) << e.file;
    EXPECT_EQ(s.input_tokens, e.input_tokens) << e.file;
    EXPECT_EQ(s.output_tokens, e.output_tokens) << e.file;
    EXPECT_EQ(s.hash_blocks, e.blocks) << e.file;
    EXPECT_EQ(s.reused_blocks, e.reused) << e.file;
    // Our writer's layout is the released one: the same bytes back.
    auto bytes = core::ReadInputFile(path);
    ASSERT_TRUE(bytes.ok());
    auto text = Gunzip(*bytes, path, int64_t{1} << 30);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    EXPECT_TRUE(FormatMooncakeTrace(*trace) == *text) << e.file;
  }
}

}  // namespace
}  // namespace tessera::workload
