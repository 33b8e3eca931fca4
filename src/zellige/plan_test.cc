// Plan JSON: a saved plan reloads to the same plan, and every field is bounded before it is
// narrowed or multiplied (a billion-token placement once ended in std::bad_alloc in `run`).
#include "zellige/plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "zellige/cost_model_analytic.h"
#include "zellige/evaluate.h"
#include "zellige/test_fixtures.h"

namespace tessera::zellige {
namespace {

using testing::MakeBatch;
using testing::TinyCluster;
using testing::TinyModel;

TEST(PlanTest, SavedPlansReload) {
  AnalyticCostModel cost(TinyCluster(2, 4), TinyModel(2));
  const workload::Batch batch = *workload::GenerateBatch({50, 20000, 5, 8, 11});
  for (const char* name : {"zellige", "usp", "knapformer", "dynamic-cp"}) {
    SCOPED_TRACE(name);
    auto run = RunPlanner(**FindPlanner(name), batch, cost, {});
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    const std::string path =
        ::testing::TempDir() + "/plan_test_" + std::to_string(getpid()) + ".json";
    ASSERT_TRUE(core::WriteJsonFile(path, ToJson(run->plan, batch)).ok());
    auto j = core::ReadJsonFile(path);
    std::remove(path.c_str());
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    auto back = PlanFromJson(*j, path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(ToJson(*back, batch), ToJson(run->plan, batch));
    EXPECT_EQ(back->planner, run->plan.planner);
    EXPECT_EQ(back->num_ranks, run->plan.num_ranks);
    ASSERT_EQ(back->placements.size(), run->plan.placements.size());
    for (size_t i = 0; i < back->placements.size(); ++i) {
      EXPECT_EQ(back->placements[i].seq, run->plan.placements[i].seq);
      EXPECT_EQ(back->placements[i].config, run->plan.placements[i].config);
      EXPECT_EQ(back->placements[i].ranks, run->plan.placements[i].ranks);
    }
    auto sim = Simulate(*back, batch, cost);
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    EXPECT_EQ(sim->makespan_s, run->sim.makespan_s);
  }
}

// Every token of every sequence is owned by exactly one rank of its placement, in member order,
// chunk sizes differ by at most one, and each rank lists its shards in issue order.
TEST(PlanTest, RankShardsCoverEverySequenceOnceInChunks) {
  AnalyticCostModel cost(TinyCluster(2, 4), TinyModel(2));
  const workload::Batch batch = *workload::GenerateBatch({60, 30000, 5, 8, 3});
  for (const char* name : {"zellige", "usp", "knapformer"}) {
    SCOPED_TRACE(name);
    auto run = RunPlanner(**FindPlanner(name), batch, cost, {});
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    const Plan& plan = run->plan;
    auto shards = RankShards(plan, batch);
    ASSERT_EQ(static_cast<int>(shards.size()), plan.num_ranks);
    std::vector<int64_t> covered(batch.sequences.size(), 0);
    std::vector<int> issue_pos(plan.placements.size());
    std::vector<int> order = IssueOrder(plan);
    for (size_t i = 0; i < order.size(); ++i) issue_pos[order[i]] = static_cast<int>(i);
    for (int r = 0; r < plan.num_ranks; ++r) {
      for (size_t i = 0; i < shards[r].size(); ++i) {
        const RankShard& s = shards[r][i];
        const Placement& pl = plan.placements[s.placement];
        EXPECT_EQ(s.seq, pl.seq);
        EXPECT_EQ(pl.ranks[s.member], r);
        EXPECT_EQ(s.config, pl.config);
        const int64_t tokens = batch.sequences[s.seq].tokens;
        const int64_t lo = tokens / pl.config.degree();
        EXPECT_GE(s.tokens(), lo);
        EXPECT_LE(s.tokens(), lo + 1);
        covered[s.seq] += s.tokens();
        if (i > 0) {
          EXPECT_LT(issue_pos[shards[r][i - 1].placement], issue_pos[s.placement]);
        }
        // Member m's range starts where member m-1's ends (contiguous, member order).
        EXPECT_EQ(s.token_begin, ChunkBegin(tokens, pl.config.degree(), s.member));
        if (s.member + 1 == pl.config.degree()) {
          EXPECT_EQ(s.token_end, tokens);
        }
      }
    }
    for (size_t q = 0; q < batch.sequences.size(); ++q)
      EXPECT_EQ(covered[q], batch.sequences[q].tokens) << "sequence " << q;
  }
}

TEST(PlanTest, FieldsAreBoundedBeforeUse) {
  const core::Json good =
      ToJson(Plan{"hand", 4, {{0, {}, {0}}, {1, {1, 2, 1}, {2, 3}}}}, MakeBatch({100, 200}));
  ASSERT_TRUE(PlanFromJson(good, "p.json").ok());
  auto bad = [&](const std::string& pointer, const core::Json& value) {
    core::Json j = good;
    j[core::Json::json_pointer(pointer)] = value;
    auto p = PlanFromJson(j, "p.json");
    EXPECT_EQ(p.status().code(), core::StatusCode::kInvalidArgument) << pointer;
    return p.status().message();
  };
  EXPECT_EQ(bad("/num_ranks", 1000000),
            "p.json: num_ranks: got 1000000, must be <= 65536 (the largest cluster tessera "
            "models)");
  EXPECT_EQ(bad("/placements/0/seq", 1000000000),
            "p.json: placements[0].seq: got 1000000000, must be in [0, 2) (one placement per "
            "sequence of the batch)");
  EXPECT_EQ(bad("/placements/1/tokens", 1000000000),
            "p.json: placements[1].tokens: got 1000000000, must be <= 134217728 (2^27, the "
            "longest sequence)");
  EXPECT_EQ(bad("/placements/1/q", 5), "p.json: placements[1].q: got 5, must be <= num_ranks (4)");
  EXPECT_EQ(bad("/placements/1/ranks", core::Json::array({2, 3, 1})),
            "p.json: placements[1].ranks: got 3 ranks, must be q*h*k = 2 for config (1,2,1)");
  EXPECT_EQ(bad("/placements/1/ranks/1", UINT64_MAX),
            "p.json: placements[1].ranks: got 18446744073709551615, must be in [0, 4)");
  EXPECT_EQ(bad("/placements/0/h", "2"), "p.json: placements[0].h: got \"2\", must be an integer");
  // A key the format lacks is refused, not ignored ("rank" for "ranks" once planned as if
  // absent).
  EXPECT_EQ(bad("/placements/1/rank", 2),
            "p.json: placements[1]: unknown key 'rank', must be one of seq, q, h, k, ranks, "
            "tokens");
  EXPECT_EQ(bad("/solver_gap", 0.1),
            "p.json: unknown key 'solver_gap', must be one of planner, num_ranks, placements");
  // q, h and k are each <= num_ranks; their product is checked in 64 bits (65536^3 once
  // overflowed int).
  core::Json big = good;
  big["num_ranks"] = 65536;
  big["placements"][1]["q"] = 65536;
  big["placements"][1]["h"] = 65536;
  big["placements"][1]["k"] = 65536;
  EXPECT_EQ(PlanFromJson(big, "p.json").status().message(),
            "p.json: placements[1]: config (65536,65536,65536) has degree 281474976710656, must "
            "be <= num_ranks (65536)");
  // The total is bounded like a batch's.
  core::Json many = {{"planner", "hand"}, {"num_ranks", 1}, {"placements", core::Json::array()}};
  for (int i = 0; i < 513; ++i) {
    many["placements"].push_back(
        {{"seq", i}, {"q", 1}, {"h", 1}, {"k", 1}, {"ranks", {0}}, {"tokens", 134217728}});
  }
  EXPECT_EQ(PlanFromJson(many, "p.json").status().message(),
            "p.json: placements: got 68853694464 tokens by placements[512], must be <= "
            "68719476736 in all (2^36, the largest batch)");
}

}  // namespace
}  // namespace tessera::zellige
