#include "elaswave/job_shape.h"

#include <gtest/gtest.h>

#include "elaswave/elaswave_test_util.h"

namespace tessera::elaswave {
namespace {

JobShape Good() { return testing::TestShape(); }

void ExpectRefused(const JobShape& s, int processes, const std::string& needle) {
  const core::Status st = ValidateJobShape(s, processes);
  ASSERT_FALSE(st.ok()) << needle;
  EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
}

TEST(JobShape, LayoutRoundTrips) {
  const JobShape s = Good();
  EXPECT_TRUE(ValidateJobShape(s, 8).ok());
  EXPECT_EQ(s.processes(), 8);
  EXPECT_EQ(s.num_slots(), 10);
  EXPECT_EQ(s.num_micro_batches(), 16);
  for (int w = 0; w < s.processes(); ++w) {
    EXPECT_EQ(s.WorldId(s.ReplicaOf(w), s.StageOf(w), s.TpRankOf(w)), w);
  }
  // TP innermost: a TP group is two adjacent world ids.
  EXPECT_EQ(s.WorldId(1, 0, 1), 5);
  EXPECT_EQ(SlotName(0, 8), "embedding");
  EXPECT_EQ(SlotName(3, 8), "block 2");
  EXPECT_EQ(SlotName(9, 8), "head");
}

TEST(JobShape, BadShapesNameFieldValueAndRule) {
  JobShape s = Good();
  ExpectRefused(s, 6, "processes: got 6, but dp x pp x tp = 2 x 2 x 2 = 8");
  s = Good();
  s.pp = 9;
  ExpectRefused(s, -1, "pp: got 9, but the model has 8 layers");
  s = Good();
  s.global_batch = 31;
  ExpectRefused(s, -1, "global-batch: got 31, not divisible by micro-batch 2");
  s = Good();
  s.global_batch = 6;  // 3 micro-batches over dp 2
  ExpectRefused(s, -1, "not divisible by dp 2");
  s = Good();
  s.tp = 0;
  ExpectRefused(s, -1, "tp: got 0, must be in [1, 1024]");
  s = Good();
  s.micro_batch = 64;
  ExpectRefused(s, -1, "micro-batch: got 64, must be in [1, global-batch 32]");
}

}  // namespace
}  // namespace tessera::elaswave
