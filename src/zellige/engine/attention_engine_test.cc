// AttentionEngine on the in-process fake backend: every primitive and mixed plans against
// the single-process reference (engine_check.h).
#include "zellige/engine/attention_engine.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "comm/in_process_communicator.h"
#include "zellige/engine/engine_check.h"

namespace tessera::zellige::engine {
namespace {

using zellige::ParallelConfig;
using zellige::Placement;
using zellige::Plan;

constexpr int kHeadDim = 64;
constexpr double kTol = 1e-5;

const auto P = &MakePlacement;

Plan MakePlan(int n, std::vector<Placement> ps) {
  Plan p;
  p.planner = "test";
  p.num_ranks = n;
  p.placements = std::move(ps);
  return p;
}

// Runs the check on n fake ranks; returns one status/stats per rank.
std::vector<core::StatusOr<ErrorStats>> RunCheck(const Plan& plan, const workload::Batch& batch,
                                                 int heads, uint64_t seed = 7,
                                                 int world_size = -1) {
  const int n = world_size > 0 ? world_size : plan.num_ranks;
  std::vector<core::StatusOr<ErrorStats>> out(n, core::Internal("not run"));
  comm::RunInProcessRanks(n, [&](comm::Communicator& world) {
    world.set_op_timeout_s(30);
    out[world.rank()] = RunEngineCheck(plan, batch, heads, kHeadDim, seed, &world);
  });
  return out;
}

void ExpectMatches(const Plan& plan, const workload::Batch& batch, int heads,
                   const std::string& what) {
  auto res = RunCheck(plan, batch, heads);
  for (int r = 0; r < plan.num_ranks; ++r) {
    ASSERT_TRUE(res[r].ok()) << what << " rank " << r << ": " << res[r].status().ToString();
    EXPECT_LT(res[r]->max_rel, kTol) << what << " rank " << r << " abs " << res[r]->max_abs;
  }
}

struct PrimitiveCase {
  const char* name;
  int n, q, h, k, heads;
};

void PrintTo(const PrimitiveCase& c, std::ostream* os) { *os << c.name; }

class PrimitiveTest : public ::testing::TestWithParam<PrimitiveCase> {};

TEST_P(PrimitiveTest, MatchesReference) {
  const PrimitiveCase& c = GetParam();
  std::vector<int> ranks;
  for (int i = 0; i < c.n; ++i) ranks.push_back(i);
  // Two sequences on the same set (one segment), uneven chunking (37 and 130 tokens).
  Plan plan = MakePlan(c.n, {P(0, c.q, c.h, c.k, ranks), P(1, c.q, c.h, c.k, ranks)});
  ExpectMatches(plan, MakeBatch({37, 130}), c.heads, c.name);
  // Reversed rank order: member i is rank n-1-i.
  std::vector<int> rev(ranks.rbegin(), ranks.rend());
  Plan plan2 = MakePlan(c.n, {P(0, c.q, c.h, c.k, rev)});
  ExpectMatches(plan2, MakeBatch({64}), c.heads, std::string(c.name) + " reversed");
}

INSTANTIATE_TEST_SUITE_P(
    All, PrimitiveTest,
    ::testing::Values(
        PrimitiveCase{"ulysses2", 2, 1, 2, 1, 4}, PrimitiveCase{"ulysses3", 3, 1, 3, 1, 3},
        PrimitiveCase{"ulysses4", 4, 1, 4, 1, 4}, PrimitiveCase{"gather2", 2, 2, 1, 1, 4},
        PrimitiveCase{"gather3", 3, 3, 1, 1, 2}, PrimitiveCase{"gather4", 4, 4, 1, 1, 2},
        PrimitiveCase{"ring2", 2, 1, 1, 2, 2}, PrimitiveCase{"ring3", 3, 1, 1, 3, 2},
        PrimitiveCase{"ring4", 4, 1, 1, 4, 2}, PrimitiveCase{"q2h2", 4, 2, 2, 1, 4},
        PrimitiveCase{"h2k2", 4, 1, 2, 2, 4}, PrimitiveCase{"q2k2", 4, 2, 1, 2, 2},
        PrimitiveCase{"q2h2k2", 8, 2, 2, 2, 4}),
    [](const ::testing::TestParamInfo<PrimitiveCase>& info) { return info.param.name; });

TEST(AttentionEngineTest, WholeSequencesCoalesceIntoOneSegment) {
  Plan plan =
      MakePlan(2, {P(0, 1, 1, 1, {0}), P(1, 1, 1, 1, {1}), P(2, 1, 1, 1, {0}), P(3, 1, 1, 1, {0})});
  workload::Batch batch = MakeBatch({16, 100, 33, 200});
  ExpectMatches(plan, batch, 2, "whole");
  std::vector<int> segs(2, -1);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    auto e = AttentionEngine::Create(plan, batch, 2, kHeadDim, &world);
    if (e.ok()) segs[world.rank()] = (*e)->num_local_segments();
  });
  EXPECT_EQ(segs[0], 1);
  EXPECT_EQ(segs[1], 1);
}

// Local rows follow execution order: the split sequence (issued first) and then the rank's
// whole sequences as one contiguous block, although plan order interleaves them; results
// still match (the whole block runs directly on the caller's buffers).
TEST(AttentionEngineTest, LocalLayoutIsExecutionOrderWithWholeSequencesContiguous) {
  Plan plan = MakePlan(
      2, {P(0, 1, 1, 1, {0}), P(1, 1, 2, 1, {0, 1}), P(2, 1, 1, 1, {0}), P(3, 1, 1, 1, {1})});
  workload::Batch batch = MakeBatch({16, 100, 33, 200});
  ExpectMatches(plan, batch, 2, "interleaved whole");
  std::vector<std::vector<std::pair<int, int64_t>>> layout(2);  // (seq, offset) per rank
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    auto e = AttentionEngine::Create(plan, batch, 2, kHeadDim, &world);
    if (!e.ok()) return;
    for (const LocalPlacement& lp : (*e)->local_placements())
      layout[world.rank()].push_back({lp.seq, lp.offset});
  });
  using V = std::vector<std::pair<int, int64_t>>;
  EXPECT_EQ(layout[0], (V{{1, 0}, {0, 50}, {2, 66}}));
  EXPECT_EQ(layout[1], (V{{1, 0}, {3, 50}}));
}

TEST(AttentionEngineTest, MixedOverlappingRankSets) {
  Plan plan =
      MakePlan(4, {P(0, 1, 2, 2, {0, 1, 2, 3}), P(1, 1, 1, 2, {1, 2}), P(2, 1, 2, 1, {2, 3}),
                   P(3, 1, 1, 1, {0}), P(4, 1, 1, 1, {0}), P(5, 2, 1, 1, {0, 1}),
                   P(6, 1, 2, 1, {2, 3}), P(7, 2, 2, 1, {3, 2, 1, 0}), P(8, 1, 1, 1, {3})});
  ExpectMatches(plan, MakeBatch({300, 77, 50, 16, 40, 129, 64, 99, 20}), 4, "mixed");
}

TEST(AttentionEngineTest, RandomPlansAtFourRanks) {
  core::Rng rng(123);
  for (int i = 0; i < 15; ++i) {
    RandomCase c = RandomPlan(rng, 4, 4, 6, 16, 160);
    ExpectMatches(c.plan, c.batch, 4, "random plan " + std::to_string(i));
  }
}

// The checker itself must see a wrong answer: data of another seed gives a large error.
TEST(AttentionEngineTest, CheckerDetectsWrongOutputs) {
  Plan plan = MakePlan(2, {P(0, 1, 1, 2, {0, 1})});
  workload::Batch batch = MakeBatch({64});
  std::vector<double> rel(2, 0);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    auto e = AttentionEngine::Create(plan, batch, 2, kHeadDim, &world);
    if (!e.ok()) return;
    LocalData d = MakeLocalData(**e, 1);
    std::vector<float> o(d.q.size()), dq(d.q.size()), dk(d.q.size()), dv(d.q.size());
    ForwardState st;
    if (!(*e)->Forward(d.q, d.k, d.v, o, &st).ok()) return;
    if (!(*e)->Backward(st, d.q, d.k, d.v, o, d.d_o, dq, dk, dv).ok()) return;
    auto good = CompareWithReference(**e, batch, 1, o, dq, dk, dv);
    auto bad = CompareWithReference(**e, batch, 2, o, dq, dk, dv);
    if (good.ok() && bad.ok() && good->max_rel < kTol) rel[world.rank()] = bad->max_rel;
  });
  EXPECT_GT(rel[0], 0.1);
  EXPECT_GT(rel[1], 0.1);
}

TEST(AttentionEngineTest, BadInputFailsOnEveryRankWithoutHanging) {
  workload::Batch batch = MakeBatch({64});
  const Plan wrong_ranks = MakePlan(3, {P(0, 1, 2, 1, {0, 1})});
  const Plan bad_heads = MakePlan(2, {P(0, 1, 2, 1, {0, 1})});  // h=2 with 3 heads
  const Plan dup = MakePlan(2, {P(0, 1, 1, 2, {1, 1})});
  struct Case {
    const Plan* plan;
    int heads;
  };
  for (const Case& c : {Case{&wrong_ranks, 2}, Case{&bad_heads, 3}, Case{&dup, 2}}) {
    auto res = RunCheck(*c.plan, batch, c.heads, 7, /*world_size=*/2);
    for (int r = 0; r < 2; ++r) {
      ASSERT_FALSE(res[r].ok());
      EXPECT_EQ(res[r].status().code(), core::StatusCode::kInvalidArgument)
          << res[r].status().ToString();
    }
  }
}

TEST(AttentionEngineTest, BufferSizeErrorsAndMemoryTracking) {
  Plan plan = MakePlan(2, {P(0, 1, 1, 2, {0, 1}), P(1, 1, 1, 1, {1})});
  workload::Batch batch = MakeBatch({128, 32});
  std::vector<int64_t> peak(2, -1), after(2, -1);
  std::vector<std::string> errors(2);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    auto e = AttentionEngine::Create(plan, batch, 2, kHeadDim, &world);
    if (!e.ok()) return;
    AttentionEngine& eng = **e;
    LocalData d = MakeLocalData(eng, 1);
    std::vector<float> o(d.q.size()), small(3);
    ForwardState st;
    auto bad = eng.Forward(d.q, d.k, small, o, &st);
    errors[world.rank()] = bad.ToString();
    {
      ForwardState st2;
      if (!eng.Forward(d.q, d.k, d.v, o, &st2).ok()) return;
      peak[world.rank()] = eng.memory().peak_bytes();
    }
    after[world.rank()] = eng.memory().live_bytes();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(errors[r].find("v has 3 floats"), std::string::npos) << errors[r];
    // At least the saved state: q_h, kv_ring (2x), o_h of this rank's tokens.
    EXPECT_GE(peak[r], 4 * 64 * 2 * kHeadDim * 4);
    EXPECT_EQ(after[r], 0);
  }
}

// A model keeps one ForwardState per layer: two layers forward, then backward in reverse
// order, each must match the reference of its own data.
TEST(AttentionEngineTest, OneStatePerLayerBackwardInReverseOrder) {
  Plan plan = MakePlan(4, {P(0, 1, 2, 2, {0, 1, 2, 3}), P(1, 2, 1, 1, {2, 3}), P(2, 1, 1, 1, {1})});
  workload::Batch batch = MakeBatch({150, 66, 40});
  std::vector<double> rel(8, 1.0);
  comm::RunInProcessRanks(4, [&](comm::Communicator& world) {
    auto e = AttentionEngine::Create(plan, batch, 4, kHeadDim, &world);
    if (!e.ok()) return;
    AttentionEngine& eng = **e;
    LocalData d[2] = {MakeLocalData(eng, 11), MakeLocalData(eng, 12)};
    const size_t n = d[0].q.size();
    std::vector<float> o[2] = {std::vector<float>(n), std::vector<float>(n)};
    ForwardState st[2];
    for (int l = 0; l < 2; ++l)
      if (!eng.Forward(d[l].q, d[l].k, d[l].v, o[l], &st[l]).ok()) return;
    for (int l = 1; l >= 0; --l) {
      std::vector<float> dq(n), dk(n), dv(n);
      if (!eng.Backward(st[l], d[l].q, d[l].k, d[l].v, o[l], d[l].d_o, dq, dk, dv).ok()) return;
      auto r = CompareWithReference(eng, batch, 11 + l, o[l], dq, dk, dv);
      if (r.ok()) rel[world.rank() * 2 + l] = r->max_rel;
    }
  });
  for (double r : rel) EXPECT_LT(r, kTol);
}

TEST(ChunkingTest, NearlyEqualContiguousChunks) {
  EXPECT_EQ(ChunkBegin(10, 4, 0), 0);
  EXPECT_EQ(ChunkBegin(10, 4, 1), 2);
  EXPECT_EQ(ChunkBegin(10, 4, 2), 5);
  EXPECT_EQ(ChunkBegin(10, 4, 3), 7);
  EXPECT_EQ(ChunkBegin(10, 4, 4), 10);
}

}  // namespace
}  // namespace tessera::zellige::engine
