// TrainOnPlan, RunAttentionSteps and the job planning (PlanForJob, ShareJobPlan) on
// in-process fake ranks: reports agree on every rank, the checks pass as computed and the
// decisions fail with their reasons when the limits are impossible.
#include "zellige/engine/train_on_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/in_process_communicator.h"
#include "zellige/engine/attention_run.h"
#include "zellige/engine/dit_training_test_util.h"
#include "zellige/engine/plan_for_job.h"

namespace tessera::zellige::engine {
namespace {

TrainOptions TinyTrain(int steps) {
  TrainOptions o;
  o.model = testing::TinyConfig();
  o.optimizer = testing::TinyAdamW();
  o.data_seed = testing::kDataSeed;
  o.steps = steps;
  return o;
}

// Runs TrainOnPlan on 2 fake ranks; every rank's result in order.
std::vector<core::StatusOr<TrainReport>> TrainOnTwoRanks(const TrainOptions& o) {
  const testing::TrainCase c = testing::MixedCase();
  std::vector<core::StatusOr<TrainReport>> out(2, core::Internal("not run"));
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    out[world.rank()] = TrainOnPlan(world, c.plan, c.batch, o);
  });
  return out;
}

TEST(TrainOnPlan, CheckPassesAndReportsAgreeOnEveryRank) {
  TrainOptions o = TinyTrain(6);
  o.check = true;
  o.max_loss_ratio = 1.5;
  auto r = TrainOnTwoRanks(o);
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(r[k].ok()) << r[k].status().ToString();
  const TrainReport& a = *r[0];
  EXPECT_TRUE(a.pass()) << (a.failures.empty() ? "" : a.failures[0]);
  EXPECT_TRUE(a.check_pass);
  EXPECT_LE(a.worst.loss_max_rel, kTrainCheckTolerance);
  EXPECT_LE(a.worst.gradient_max_rel, kTrainCheckTolerance);
  EXPECT_LE(a.worst.output_max_rel, kTrainCheckTolerance);
  EXPECT_EQ(a.loss, r[1]->loss);
  EXPECT_EQ(a.worst_gradient_tensor_rank0, r[1]->worst_gradient_tensor_rank0);
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.ranks[0].local_tokens + a.ranks[1].local_tokens > 0, true);
  EXPECT_EQ(a.ranks[1].local_tokens, r[1]->ranks[1].local_tokens);
  EXPECT_GT(a.ranks[0].peak_bytes(), a.ranks[0].model_optimizer_bytes);
  ASSERT_EQ(a.max_step_time_s.size(), 6u);
  for (int s = 0; s < 6; ++s) {
    EXPECT_GE(a.max_step_time_s[s], a.ranks[0].step_time_s[s]);
    EXPECT_GE(a.max_step_time_s[s], a.ranks[1].step_time_s[s]);
  }
  EXPECT_EQ(a.loss_window, 3);
  EXPECT_EQ(a.reference_loss.size(), 6u);

  const core::Json j = ToJson(a);
  for (const char* key : {"label", "mode", "num_ranks", "model", "lr", "seed", "steps", "loss",
                          "max_step_time_s", "ranks", "check"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][0]["peak_bytes"].get<int64_t>(), a.ranks[0].peak_bytes());
  EXPECT_EQ(j["check"]["ranks"].size(), 2u);
  EXPECT_EQ(j["model"]["head_dim"].get<int>(), 16);
}

TEST(TrainOnPlan, ImpossibleLossRatioFailsWithItsReason) {
  TrainOptions o = TinyTrain(2);
  o.max_loss_ratio = 1e-6;
  auto r = TrainOnTwoRanks(o);
  for (int k = 0; k < 2; ++k) {
    ASSERT_TRUE(r[k].ok()) << r[k].status().ToString();
    EXPECT_FALSE(r[k]->pass());
    EXPECT_FALSE(r[k]->loss_ratio_pass);
    ASSERT_EQ(r[k]->failures.size(), 1u);
    EXPECT_NE(r[k]->failures[0].find("max_loss_ratio: loss ratio"), std::string::npos);
  }
  EXPECT_EQ(r[0]->loss_window, 1);
}

TEST(TrainOnPlan, RejectsZeroSteps) {
  auto r = TrainOnTwoRanks(TinyTrain(0));
  EXPECT_EQ(r[0].status().code(), core::StatusCode::kInvalidArgument);
}

TEST(LossWindow, IsHalfTheStepsCappedAtFive) {
  EXPECT_EQ(LossWindow(1), 1);
  EXPECT_EQ(LossWindow(2), 1);
  EXPECT_EQ(LossWindow(7), 3);
  EXPECT_EQ(LossWindow(50), 5);
}

TEST(RunAttentionSteps, CheckPassesOnTwoRanks) {
  const testing::TrainCase c = testing::MixedCase();
  std::vector<core::StatusOr<AttentionRunReport>> out(2, core::Internal("not run"));
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    out[world.rank()] = RunAttentionSteps(world, c.plan, c.batch, {2, 8, 5, 2, true, "plan"});
  });
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(out[k].ok()) << out[k].status().ToString();
  const AttentionRunReport& a = *out[0];
  EXPECT_TRUE(a.pass());
  EXPECT_LE(a.max_rel_err, kAttentionCheckTolerance);
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.ranks[1].peak_bytes, out[1]->ranks[1].peak_bytes);
  EXPECT_GT(a.ranks[0].peak_bytes, 0);
  EXPECT_EQ(a.ranks[0].step_time_s.size(), 2u);
  const core::Json j = ToJson(a);
  EXPECT_EQ(j["ranks"].size(), 2u);
  EXPECT_TRUE(j["check"]["pass"].get<bool>());
}

TEST(RunAttentionSteps, PlanForOtherRankCountIsPrefixedWithItsSource) {
  const testing::TrainCase c = testing::MixedCase();
  std::vector<core::Status> st(3);
  comm::RunInProcessRanks(3, [&](comm::Communicator& world) {
    st[world.rank()] =
        RunAttentionSteps(world, c.plan, c.batch, {2, 8, 5, 1, false, "p.json"}).status();
  });
  EXPECT_FALSE(st[0].ok());
  EXPECT_NE(st[0].message().find("p.json"), std::string::npos) << st[0].ToString();
}

TEST(ThisMachine, IsOneModeledNode) {
  const hw::Cluster c = ThisMachine(3);
  EXPECT_EQ(c.num_ranks(), 3);
  EXPECT_EQ(c.nodes, 1);
  EXPECT_NE(c.provenance.find("modeled"), std::string::npos);
}

PlanJobRequest UspRequest() {
  PlanJobRequest r;
  r.workload = {"v50", "low", 5, 1, 0.002};
  r.planner = "usp";
  r.model = {"small-dit", 32, 2, 2, 64, 0, 4};
  return r;
}

TEST(PlanForJob, PlansAWorkloadAndEveryRankParsesTheSamePlan) {
  std::vector<core::StatusOr<JobPlan>> out(2, core::Internal("not run"));
  comm::RunInProcessRanks(
      2, [&](comm::Communicator& world) { out[world.rank()] = ShareJobPlan(world, UspRequest()); });
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(out[k].ok()) << out[k].status().ToString();
  EXPECT_EQ(out[0]->plan.planner, "usp");
  EXPECT_EQ(out[0]->plan.num_ranks, 2);
  EXPECT_EQ(out[0]->json, out[1]->json);
  EXPECT_EQ(out[0]->batch.total_tokens(), out[1]->batch.total_tokens());
  EXPECT_GT(out[0]->batch.total_tokens(), 0);
}

TEST(PlanForJob, ErrorsReachEveryRankAlike) {
  PlanJobRequest r = UspRequest();
  r.planner = "no-such-planner";
  std::vector<core::Status> st(2);
  comm::RunInProcessRanks(
      2, [&](comm::Communicator& world) { st[world.rank()] = ShareJobPlan(world, r).status(); });
  EXPECT_FALSE(st[0].ok());
  EXPECT_EQ(st[0].code(), st[1].code());
  EXPECT_EQ(st[0].message(), st[1].message());
  EXPECT_NE(st[0].message().find("usp"), std::string::npos) << st[0].ToString();
}

TEST(PlanForJob, RejectsClusterWithOtherRankCountAndClusterWithProfile) {
  PlanJobRequest r = UspRequest();
  r.cluster = "a800x16";
  auto bad = PlanForJob(r, 2);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cluster: a800x16 has"), std::string::npos);
  r.profile = "some.json";
  r.cluster = "";
  EXPECT_FALSE(PlanForJob(r, 2).ok());
}

// `run` builds its batch from a plan file's "tokens": they are bounded when read, so a
// billion-token placement (once std::bad_alloc) or a seq far past the placements is a named
// error.
TEST(PlanForJob, PlanFileTokensAndSequencesAreBounded) {
  const core::Json good = {
      {"planner", "hand"},
      {"num_ranks", 2},
      {"placements",
       {{{"seq", 0}, {"q", 1}, {"h", 1}, {"k", 1}, {"ranks", {0}}, {"tokens", 100}},
        {{"seq", 1}, {"q", 1}, {"h", 1}, {"k", 1}, {"ranks", {1}}, {"tokens", 50}}}}};
  auto parsed = ParseJobPlan(good, "p.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->batch.total_tokens(), 150);
  auto bad = [&](const std::string& pointer, const core::Json& value) {
    core::Json j = good;
    j[core::Json::json_pointer(pointer)] = value;
    auto r = ParseJobPlan(j, "p.json");
    EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument) << pointer;
    return r.status().message();
  };
  EXPECT_EQ(bad("/placements/0/tokens", 1000000000),
            "p.json: placements[0].tokens: got 1000000000, must be <= 134217728 (2^27, the "
            "longest sequence)");
  EXPECT_EQ(bad("/placements/1/seq", 1000000000),
            "p.json: placements[1].seq: got 1000000000, must be in [0, 2) (one placement per "
            "sequence of the batch)");
  EXPECT_EQ(bad("/placements/1/seq", 0),
            "p.json: placements[1].seq: sequence 0 is placed more than once");
  core::Json no_tokens = good;
  no_tokens["placements"][1].erase("tokens");
  EXPECT_EQ(ParseJobPlan(no_tokens, "p.json").status().message(),
            "p.json: placements[1].tokens: missing required field");
}

}  // namespace
}  // namespace tessera::zellige::engine
