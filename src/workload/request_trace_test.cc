#include "workload/request_trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "workload/gzip_text.h"

namespace tessera::workload {
namespace {

// A valid line: ids start at `first`, one per 512-token block.
std::string Line(int64_t ts, int64_t in, int64_t out, int64_t first = 0) {
  std::string ids;
  for (int64_t i = 0; i < TraceBlocks(in); ++i) ids += (i ? ", " : "") + std::to_string(first + i);
  return "{\"timestamp\": " + std::to_string(ts) + ", \"input_length\": " + std::to_string(in) +
         ", \"output_length\": " + std::to_string(out) + ", \"hash_ids\": [" + ids + "]}";
}

// The message of parsing `text`, which must fail.
std::string Error(const std::string& text, MooncakeReadOptions options = {}) {
  auto r = ParseMooncakeTrace(text, "t.jsonl", options);
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : r.status().message();
}

TEST(MooncakeTrace, ParsesTheReleasedLayout) {
  const std::string text =
      Line(0, 1000, 10) + "\n" + Line(5, 512, 1, 2) + "\n" + Line(5, 513, 7, 0) + "\n";
  auto r = ParseMooncakeTrace(text, "t.jsonl", {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], (TraceRequest{0, 1000, 10, {0, 1}}));
  EXPECT_EQ((*r)[1], (TraceRequest{5, 512, 1, {2}}));
  EXPECT_EQ((*r)[2], (TraceRequest{5, 513, 7, {0, 1}}));
  EXPECT_EQ(FormatMooncakeTrace(*r), text);  // the same bytes back
}

TEST(MooncakeTrace, SkipsBlankLinesButCountsThem) {
  const std::string text = "\n" + Line(0, 10, 1) + "\r\n  \n" + Line(1, 10, 1, 1);
  auto r = ParseMooncakeTrace(text, "t.jsonl", {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->size(), 2u);
  EXPECT_NE(Error("\n\n" + Line(0, 10, 1) + "\n{").find("t.jsonl: line 4: "), std::string::npos);
}

TEST(MooncakeTrace, EachBadInputNamesItsLineAndField) {
  const std::string ok = Line(10, 1000, 5) + "\n";
  struct Case {
    std::string line;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"{\"timestamp\": 11, \"input_length\": 10, \"output_length\": 1}",
       "line 2: hash_ids: missing"},
      {"{\"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}",
       "line 2: timestamp: missing"},
      {"{\"timestamp\": 11, \"output_length\": 1, \"hash_ids\": [0]}",
       "line 2: input_length: missing"},
      {"{\"timestamp\": 11, \"input_length\": 10, \"hash_ids\": [0]}",
       "line 2: output_length: missing"},
      {Line(11, -5, 1), "line 2: input_length: got -5, must be an integer in [1, "},
      {Line(11, 10, -1), "line 2: output_length: got -1, must be an integer in [1, "},
      {Line(11, 10, 0), "line 2: output_length: got 0"},
      {"{\"timestamp\": 11, \"input_length\": 10.5, \"output_length\": 1, \"hash_ids\": [0]}",
       "line 2: input_length: got 10.5"},
      {"{\"timestamp\": 11, \"input_length\": \"10\", \"output_length\": 1, \"hash_ids\": [0]}",
       "line 2: input_length: got \"10\""},
      {Line(9, 10, 1), "line 2: timestamp: got 9, must be >= 10 (the timestamp of line 1"},
      {Line(-1, 10, 1), "line 2: timestamp: got -1, must be an integer >= 0"},
      {"{\"timestamp\": 1.5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}",
       "line 2: timestamp: got 1.5, must be an integer >= 0 (ms)"},
      {"{\"timestamp\": 11, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": 3}",
       "line 2: hash_ids: got 3, must be an array of integers >= 0"},
      {"{\"timestamp\": 11, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [-2]}",
       "line 2: hash_ids[0]: got -2, must be an integer >= 0"},
      {"{\"timestamp\": 11, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [0, \"a\"]}",
       "line 2: hash_ids[1]: got \"a\""},
      {"{\"timestamp\": 11, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [0]}",
       "line 2: hash_ids: got 1 ids, must be ceil(input_length 600 / 512) = 2"},
      {"{\"timestamp\": 11, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0, 1]}",
       "line 2: hash_ids: got 2 ids, must be ceil(input_length 10 / 512) = 1"},
      {"{\"timestamp\": 11, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [4, 4]}",
       "line 2: hash_ids: id 4 appears twice"},
      {"{\"timestamp\": 11, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0], "
       "\"session\": 3}",
       "line 2: session: unknown key"},
      {"{\"timestamp\": 11, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]",
       "line 2: malformed JSON"},
      {"[1, 2]", "line 2: got [1,2], must be a JSON object"},
      {"{\"timestamp\": 11, \"timestamp\": 12, \"input_length\": 10, \"output_length\": 1, "
       "\"hash_ids\": [0]}",
       "line 2: timestamp: duplicate key"},
  };
  for (const Case& c : cases) {
    const std::string message = Error(ok + c.line + "\n" + ok);
    EXPECT_NE(message.find("t.jsonl: " + c.needle), std::string::npos)
        << "line: " << c.line << "\nmessage: " << message;
  }
}

TEST(MooncakeTrace, LenientIgnoresUnknownKeysOnly) {
  const std::string text =
      "{\"timestamp\": 1, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0], "
      "\"session\": 3}\n";
  auto r = ParseMooncakeTrace(text, "t.jsonl", {.lenient = true});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0], (TraceRequest{1, 10, 1, {0}}));
  EXPECT_NE(Error(Line(1, -1, 1), {.lenient = true}).find("input_length: got -1"),
            std::string::npos);
}

TEST(MooncakeTrace, RefusesAnEmptyTrace) {
  EXPECT_NE(Error("\n \n").find("t.jsonl: holds no request"), std::string::npos);
}

TEST(MooncakeTrace, WriteThenReadGivesTheSameRequestsPlainAndGzip) {
  std::vector<TraceRequest> requests = {
      {0, 1, 1, {7}}, {0, 1024, 3, {7, 8}}, {250, 1025, 900, {7, 8, 9}}, {9000, 40000, 2, {}}};
  for (int64_t i = 0; i < TraceBlocks(40000); ++i) requests.back().hash_ids.push_back(100 + i);
  ASSERT_TRUE(ValidateTrace(requests).ok());
  for (const std::string name : {"rt.jsonl", "rt.jsonl.gz"}) {
    const std::string path = ::testing::TempDir() + "/tessera_trace_" + name;
    ASSERT_TRUE(WriteMooncakeTrace(path, requests).ok());
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(IsGzip(bytes), name.ends_with(".gz")) << name;
    auto back = ReadMooncakeTrace(path, {});
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, requests) << name;
  }
}

TEST(MooncakeTrace, ValidateNamesTheRequest) {
  std::vector<TraceRequest> requests = {{5, 10, 1, {0}}, {4, 10, 1, {1}}};
  const core::Status s = ValidateTrace(requests);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("request 1: timestamp: got 4, must be >= 5 (the timestamp of "
                             "request 0"),
            std::string::npos)
      << s.message();
}

TEST(MooncakeTrace, ReadNamesAMissingFileAndBadGzip) {
  auto missing = ReadMooncakeTrace(::testing::TempDir() + "/tessera_no_such_trace.jsonl", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no such file"), std::string::npos);
  const std::string path = ::testing::TempDir() + "/tessera_trace_bad.jsonl.gz";
  std::ofstream(path, std::ios::binary) << std::string("\x1f\x8b\x08\x00garbage", 11);
  auto bad = ReadMooncakeTrace(path, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a valid gzip file"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace tessera::workload
