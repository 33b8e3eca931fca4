#include "elaswave/fault_plan.h"

#include <gtest/gtest.h>

#include "elaswave/elaswave_test_util.h"

namespace tessera::elaswave {
namespace {

JobShape Shape() { return testing::TestShape(); }

core::StatusOr<std::vector<FaultEvent>> Parse(const std::string& text) {
  auto j = core::ParseJson(text, "f.json");
  if (!j.ok()) return j.status();
  return ParseFaultPlan(*j, "f.json", Shape(), 100);
}

void ExpectRefused(const std::string& text, const std::string& needle) {
  auto r = Parse(text);
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(FaultPlan, ParsesEveryKindAndRoundTrips) {
  const std::string text = R"([
    {"at": {"step": 20, "phase": "backward", "micro_batch": 3}, "action": "kill", "target": {"rank": 5}},
    {"at": {"time_s": 4.2}, "action": "stop", "target": {"role": "coordinator"}},
    {"at": {"step": 30, "phase": "commit"}, "action": "slow:3", "target": {"rank": 0}},
    {"at": {"step": 40, "phase": "snapshot"}, "action": "join", "target": {"rank": 5}}
  ])";
  auto r = Parse(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  const FaultEvent& k = (*r)[0];
  EXPECT_FALSE(k.at_time);
  EXPECT_EQ(k.step, 20);
  EXPECT_EQ(k.phase, StepPhase::kBackward);
  EXPECT_EQ(k.micro_batch, 3);
  EXPECT_EQ(k.action, FaultAction::kKill);
  EXPECT_EQ(k.target_rank, 5);
  EXPECT_EQ(k.Describe(), "kill rank 5 at step 20 backward micro-batch 3");
  EXPECT_TRUE((*r)[1].at_time);
  EXPECT_TRUE((*r)[1].target_coordinator);
  EXPECT_EQ((*r)[1].Describe(), "stop the coordinator at 4.2 s");
  EXPECT_EQ((*r)[2].action, FaultAction::kSlow);
  EXPECT_DOUBLE_EQ((*r)[2].slow_factor, 3.0);
  EXPECT_EQ((*r)[3].action, FaultAction::kJoin);
  auto again = ParseFaultPlan(FaultPlanToJson(*r), "round", Shape(), 100);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(FaultPlanToJson(*again), FaultPlanToJson(*r));
}

TEST(FaultPlan, RefusesBadEventsNamingFieldValueAndChoices) {
  ExpectRefused("{}", "must be a list of events");
  ExpectRefused("[1]", "event 0: got 1, must be an object");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "forward"}, "action": "kill", "target": {"rank": 8}}])",
      "event 0.target.rank: got 8, must be in [0, 7]");
  ExpectRefused(
      R"([{"at": {"step": 100, "phase": "forward"}, "action": "kill", "target": {"rank": 1}}])",
      "step: got 100");
  ExpectRefused(
      R"([{"at": {"step": -1, "phase": "forward"}, "action": "kill", "target": {"rank": 1}}])",
      "step: got -1");
  ExpectRefused(R"([{"at": {"step": 1, "phase": "fwd"}, "action": "kill", "target": {"rank": 1}}])",
                "phase: got 'fwd', must be one of forward, backward");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "forward", "micro_batch": 16}, "action": "kill", "target": {"rank": 1}}])",
      "micro_batch: got 16");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "commit", "micro_batch": 1}, "action": "kill", "target": {"rank": 1}}])",
      "only forward and backward have micro-batches");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "forward"}, "action": "explode", "target": {"rank": 1}}])",
      "action: got 'explode', must be one of kill, stop, slow:F, join");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "forward"}, "action": "slow:0.5", "target": {"rank": 1}}])",
      "slow-down factor must be a number in (1, 100]");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "forward"}, "action": "kill", "target": {"role": "boss"}}])",
      "role: got 'boss', must be coordinator");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "forward"}, "action": "join", "target": {"role": "coordinator"}}])",
      "can only be killed or stopped");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "forward"}, "action": "join", "target": {"rank": 2}}])",
      "no earlier event kills rank 2");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "forward"}, "action": "kill", "target": {"rank": 2}},
                    {"at": {"step": 1, "phase": "forward"}, "action": "kill", "target": {"rank": 2}}])",
      "event 1: duplicates an earlier event (kill rank 2 at step 1 forward)");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "forward"}, "action": "kill", "target": {"rank": 2}, "why": 1}])",
      "unknown key 'why'");
  ExpectRefused(R"([{"at": {"phase": "forward"}, "action": "kill", "target": {"rank": 2}}])",
                "needs \"step\"");
  ExpectRefused(
      R"([{"at": {"step": 1, "phase": "forward"}, "action": "kill", "target": {"rank": 1, "role": "coordinator"}}])",
      "exactly one of");
  ExpectRefused("[{", "f.json");
}

}  // namespace
}  // namespace tessera::elaswave
