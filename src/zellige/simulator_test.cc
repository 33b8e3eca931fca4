#include "zellige/simulator.h"

#include <gtest/gtest.h>

#include <vector>

#include "zellige/compare_planners.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/evaluate.h"
#include "zellige/simulator_reference.h"
#include "zellige/test_fixtures.h"

namespace tessera::zellige {
namespace {

using testing::TinyCluster;
using testing::TinyModel;

using testing::MakeBatch;

TEST(SimulatorTest, WholeSequencesAddUp) {
  AnalyticCostModel cm(TinyCluster(1, 2), TinyModel(2));
  workload::Batch b = MakeBatch({100, 200, 300});
  Plan p{"hand", 2, {{0, {}, {0}}, {1, {}, {0}}, {2, {}, {1}}}};
  auto r = Simulate(p, b, cm);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  double t0 = cm.WholeTime(100) + cm.WholeTime(200), t1 = cm.WholeTime(300);
  EXPECT_NEAR(r->busy_s[0], t0, 1e-12);
  EXPECT_NEAR(r->busy_s[1], t1, 1e-12);
  EXPECT_NEAR(r->makespan_s, std::max(t0, t1), 1e-12);
  EXPECT_NEAR(r->max_over_mean, std::max(t0, t1) / ((t0 + t1) / 2), 1e-12);
  EXPECT_EQ(r->split_sequences, 0);
  EXPECT_TRUE(r->feasible);
}

TEST(SimulatorTest, CollectiveWaitsForAllParticipants) {
  // One layer. Sequence A (1,2,1) over {0,1}; B whole on rank 0 (short); C whole on rank 1
  // (long). Issue order: A first in each pass. Forward: A [0, Af]; B then C.
  // Backward: A starts when both ranks are done: Af + max(Bf, Cf); rank 0 waits Cf - Bf.
  AnalyticCostModel cm(TinyCluster(1, 2), TinyModel(1));
  workload::Batch b = MakeBatch({400, 100, 300});
  // C listed before B in placement order; issue order sorts A (degree 2) first anyway.
  Plan p{"hand", 2, {{2, {}, {1}}, {1, {}, {0}}, {0, {1, 2, 1}, {0, 1}}}};
  auto r = Simulate(p, b, cm);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  SeqCost A = cm.Cost(400, {1, 2, 1}, {0, 1});
  SeqCost B = cm.Cost(100, {}, {0});
  SeqCost C = cm.Cost(300, {}, {1});
  double bwd_start = A.fwd_s + std::max(B.fwd_s, C.fwd_s);
  EXPECT_NEAR(r->finish_s[0], bwd_start + A.bwd_s + B.bwd_s, 1e-12);
  EXPECT_NEAR(r->finish_s[1], bwd_start + A.bwd_s + C.bwd_s, 1e-12);
  EXPECT_NEAR(r->busy_s[0], A.time_s() + B.time_s(), 1e-12);
  // Rank 0 waited (C.fwd > B.fwd), so it finished later than its busy time.
  EXPECT_GT(r->finish_s[0], r->busy_s[0] + 1e-9);
  EXPECT_NEAR(r->makespan_s, std::max(r->finish_s[0], r->finish_s[1]), 1e-15);
  EXPECT_DOUBLE_EQ(r->attn_comm_bytes, 2 * A.comm_bytes);
  EXPECT_EQ(r->split_sequences, 1);
  // Exposed communication: A's comm share of A's time on both ranks; none from B or C.
  ASSERT_GT(A.comm_s, 0);
  const double a_comm = A.time_s() * A.comm_s / (A.compute_s + A.comm_s);
  EXPECT_NEAR(r->comm_s[0], a_comm, 1e-12);
  EXPECT_NEAR(r->comm_s[1], a_comm, 1e-12);
}

TEST(SimulatorTest, WholeSequencesHaveNoCommunication) {
  AnalyticCostModel cm(TinyCluster(1, 2), TinyModel(2));
  Plan p{"hand", 2, {{0, {}, {0}}, {1, {}, {1}}}};
  auto r = Simulate(p, MakeBatch({100, 200}), cm);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->comm_s.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) EXPECT_LE(r->comm_s[rank], 1e-12 * r->busy_s[rank]);
}

TEST(SimulatorTest, OomNamesRankAndBytes) {
  hw::Cluster c = TinyCluster(1, 2);
  // Base memory (1 GiB workspace + ~0.5 MB of weights and optimizer state) plus 1 MB:
  // a 2000-token sequence (~3.3 MB) does not fit, a 10-token one does.
  c.device.memory_bytes = 1024.0 * 1024 * 1024 + 1e6;
  AnalyticCostModel cm(c, TinyModel(1));
  workload::Batch b = MakeBatch({2000, 10});
  Plan p{"hand", 2, {{0, {}, {1}}, {1, {}, {0}}}};
  auto r = Simulate(p, b, cm);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->feasible);
  EXPECT_NE(r->infeasible_reason.find("OOM on rank 1"), std::string::npos) << r->infeasible_reason;
  EXPECT_NE(r->infeasible_reason.find("over"), std::string::npos);
}

TEST(SimulatorTest, InvalidPlansAreRejected) {
  AnalyticCostModel cm(TinyCluster(1, 4), TinyModel(1));
  workload::Batch b = MakeBatch({100, 100});
  auto msg = [&](Plan p) { return Simulate(p, b, cm).status().message(); };
  EXPECT_EQ(msg({"x", 4, {{0, {}, {0}}}}), "sequence 1 is not placed");
  EXPECT_EQ(msg({"x", 4, {{0, {}, {0}}, {0, {}, {1}}, {1, {}, {2}}}}),
            "placements[1].seq: sequence 0 is placed more than once");
  EXPECT_NE(
      msg({"x", 4, {{0, {1, 3, 1}, {0, 1, 2}}, {1, {}, {3}}}}).find("must divide the head count"),
      std::string::npos);
  EXPECT_NE(msg({"x", 4, {{0, {1, 2, 1}, {0, 0}}, {1, {}, {3}}}}).find("appears twice"),
            std::string::npos);
  EXPECT_NE(msg({"x", 4, {{0, {}, {7}}, {1, {}, {3}}}}).find("must be in [0, 4)"),
            std::string::npos);
  EXPECT_NE(msg({"x", 8, {{0, {}, {0}}, {1, {}, {3}}}}).find("num_ranks"), std::string::npos);
}

TEST(SimulatorTest, TraceHasOneTrackPerRank) {
  AnalyticCostModel cm(TinyCluster(1, 2), TinyModel(2));
  workload::Batch b = MakeBatch({400, 100, 300});
  Plan p{"hand", 2, {{0, {1, 1, 2}, {0, 1}}, {1, {}, {0}}, {2, {}, {1}}}};
  core::TraceWriter t;
  ASSERT_TRUE(Simulate(p, b, cm, &t).ok());
  // 2 track names + per pass (4 = 2 layers x fwd/bwd): 2 split spans + 2 whole spans.
  EXPECT_EQ(t.size(), 2u + 4u * 4u);
}

// A price that is not finite (numbers a loader would refuse, built in code here: a 1e-300
// FLOP/s device once printed `inf` as a feasible makespan) is an InvalidArgument naming the
// placement, from both simulators and RunPlanner; never a feasible step.
TEST(SimulatorTest, NonFinitePricesAreErrorsNotFeasibleSteps) {
  hw::Cluster c = TinyCluster(1, 2);
  c.device.peak_flops.bf16 = 1e-310;  // 100 tokens take ~1e7 FLOP: inf seconds
  ASSERT_FALSE(hw::Validate(c).ok());
  AnalyticCostModel cm(c, TinyModel(1));
  workload::Batch b = MakeBatch({100, 200});
  Plan p{"hand", 2, {{0, {}, {0}}, {1, {}, {1}}}};
  for (auto sim : {&Simulate, &SimulateReference}) {
    auto r = sim(p, b, cm, nullptr);
    EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(
                  "placements[0]: the cost model prices sequence 0 (100 tokens, config (1,1,1)) "
                  "at fwd inf s",
                  0),
              0u)
        << r.status().message();
  }
  auto run = RunPlanner(**FindPlanner("dp"), b, cm, {});
  EXPECT_EQ(run.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(run.status().message().rfind("dp: placements[", 0), 0u) << run.status().message();
}

// A step of more than kMaxStepOps ops (2 x layers x placements) is refused before anything is
// allocated for it.
TEST(SimulatorTest, HugeStepsAreRefused) {
  AnalyticCostModel cm(TinyCluster(1, 2), TinyModel(1024));
  workload::Batch b = MakeBatch(std::vector<int64_t>(8193, 1));
  Plan p{"hand", 2, {}};
  for (int s = 0; s < 8193; ++s) p.placements.push_back({s, {}, {s % 2}});
  auto r = Simulate(p, b, cm);
  EXPECT_EQ(r.status().message(),
            "plan: 2 x 1024 layers x 8193 placements = 16779264 ops, must be <= 16777216 (the "
            "simulator's limit; fewer sequences or layers)");
}

// The batch alone decides the op count (one placement per sequence): checked before planning,
// by CheckBatchFits and so by every command that plans and simulates. A usp plan of a
// million-sequence batch once ran for minutes, then failed in Simulate.
TEST(SimulatorTest, TheSimulatorLimitIsCheckedOnTheBatchBeforePlanning) {
  AnalyticCostModel cm(TinyCluster(1, 2), TinyModel(1024));
  EXPECT_TRUE(CheckSimulatorLimit(MakeBatch(std::vector<int64_t>(8192, 1)), 1024).ok());
  workload::Batch b = MakeBatch(std::vector<int64_t>(8193, 1));
  const std::string want =
      "batch: 8193 sequences x 2 x 1024 layers = 16779264 simulated ops per step, above the "
      "simulator's limit of 16777216 (2^24); at most 8192 sequences with a 1024-layer model: use "
      "a smaller batch (a lower load or fewer ranks)";
  EXPECT_EQ(CheckSimulatorLimit(b, 1024).message(), want);
  EXPECT_EQ(CheckBatchFits(b, cm).message(), want);
  // ComparePlanners (zellige plan) refuses it before any planner runs.
  std::vector<const PlannerEntry*> usp = {*FindPlanner("usp")};
  auto cmp = ComparePlanners(b, cm, usp, {});
  EXPECT_EQ(cmp.status().message(), want);
}

}  // namespace
}  // namespace tessera::zellige
