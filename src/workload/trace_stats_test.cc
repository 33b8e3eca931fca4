#include "workload/trace_stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::workload {
namespace {

TEST(TraceStats, HandMadeTrace) {
  // Four requests over 3 s; inputs 100, 600, 1100, 2000 (1, 2, 3, 4 blocks).
  const std::vector<TraceRequest> trace = {
      {1000, 100, 10, {0}},
      {1500, 600, 20, {0, 1}},         // 0 seen before
      {2000, 1100, 30, {0, 1, 2}},     // 0, 1 seen before
      {4000, 2000, 40, {5, 6, 7, 2}},  // 2 seen before
  };
  const TraceStats s = ComputeTraceStats(trace);
  EXPECT_EQ(s.requests, 4);
  EXPECT_DOUBLE_EQ(s.duration_s, 3.0);
  EXPECT_DOUBLE_EQ(s.arrival_rate_per_s, 4.0 / 3.0);
  // Linear interpolation: rank p/100 * 3 over 100, 600, 1100, 2000.
  EXPECT_DOUBLE_EQ(s.input_length.p50, 850);                // between 600 and 1100
  EXPECT_DOUBLE_EQ(s.input_length.p90, 1100 + 0.7 * 900);   // rank 2.7
  EXPECT_DOUBLE_EQ(s.input_length.p99, 1100 + 0.97 * 900);  // rank 2.97
  EXPECT_EQ(s.input_length.max, 2000);
  EXPECT_DOUBLE_EQ(s.output_length.p50, 25);
  EXPECT_EQ(s.output_length.max, 40);
  EXPECT_EQ(s.input_tokens, 3800);
  EXPECT_EQ(s.output_tokens, 100);
  EXPECT_EQ(s.hash_blocks, 10);
  EXPECT_EQ(s.reused_blocks, 4);
  EXPECT_DOUBLE_EQ(s.prefix_reuse, 0.4);
}

TEST(TraceStats, OneRequestAndSimultaneousArrivals) {
  const TraceStats one = ComputeTraceStats({{7, 10, 3, {4}}});
  EXPECT_EQ(one.requests, 1);
  EXPECT_EQ(one.duration_s, 0);
  EXPECT_EQ(one.arrival_rate_per_s, 0);  // no span to divide by
  EXPECT_EQ(one.input_length.p50, 10);
  EXPECT_EQ(one.input_length.p99, 10);
  EXPECT_EQ(one.reused_blocks, 0);
  const TraceStats same = ComputeTraceStats({{0, 10, 3, {4}}, {0, 10, 3, {4}}});
  EXPECT_EQ(same.arrival_rate_per_s, 0);
  EXPECT_DOUBLE_EQ(same.prefix_reuse, 0.5);
}

TEST(TraceStats, EmptyTraceIsZeros) {
  const TraceStats s = ComputeTraceStats({});
  EXPECT_EQ(s.requests, 0);
  EXPECT_EQ(s.hash_blocks, 0);
  EXPECT_EQ(s.prefix_reuse, 0);
}

}  // namespace
}  // namespace tessera::workload
