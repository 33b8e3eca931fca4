#include "xema/timeline.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "xema/trace_generator.h"

namespace tessera::xema {
namespace {

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, ',')) out.push_back(f);
  return out;
}

TEST(TimelineTest, OneRowPerFlatOpWithTheLiveBytes) {
  const MemoryTrace t = RandomTrace(5);
  auto x = Expand(t);
  ASSERT_TRUE(x.ok());
  const std::vector<int64_t> live = LiveBytes(*x, true);
  const std::vector<int64_t> acts = LiveBytes(*x, false);
  std::stringstream csv(TimelineCsv(t, *x));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line,
            "op,name,section,step,phase,live_bytes,weight_bytes,activation_bytes,time_s,flops");
  size_t rows = 0;
  while (std::getline(csv, line)) {
    const auto f = Split(line);
    ASSERT_EQ(f.size(), 10u) << line;
    EXPECT_EQ(f[0], std::to_string(rows));
    EXPECT_EQ(std::stoll(f[5]), live[rows]);
    EXPECT_EQ(std::stoll(f[7]), acts[rows]);
    EXPECT_EQ(std::stoll(f[6]) + acts[rows], live[rows]);
    ++rows;
  }
  EXPECT_EQ(rows, x->ops.size());
}

TEST(TimelineTest, QuotesNamesWithCommas) {
  MemoryTrace t = RandomTrace(6);
  t.prologue[0].name = "text,\"enc\"";
  auto x = Expand(t);
  ASSERT_TRUE(x.ok());
  const std::string csv = TimelineCsv(t, *x);
  EXPECT_NE(csv.find("0,\"text,\"\"enc\"\"\",prologue,-1,"), std::string::npos) << csv;
}

}  // namespace
}  // namespace tessera::xema
