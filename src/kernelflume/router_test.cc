#include "kernelflume/router.h"

#include <gtest/gtest.h>

#include "core/rng.h"

namespace tessera::kernelflume {
namespace {

TEST(RouterTest, ReroutesEveryKTokensAcrossNodesAndStaysValid) {
  RouteStore store(1000);
  Router router(store, {.range_tokens_max = 1000, .reroute_every = 7});
  for (int32_t n = 0; n < 3; ++n) ASSERT_TRUE(router.AddNode({n, "", 10000}).ok());
  ASSERT_TRUE(router.AddRequest(5).ok());
  int64_t length = 0;
  // A prefill chunk of 12 then single tokens.
  auto snap = router.PrepareStep(5, length, 12);
  ASSERT_TRUE(snap.ok());
  length += 12;
  for (int i = 0; i < 30; ++i) {
    auto s = router.PrepareStep(5, length, 1);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE(Validate(**s).ok()) << Validate(**s).ToString();
    const RouteRange& tail = (*s)->Find(5)->tail();
    EXPECT_LE(length + 1 - tail.start, 12);  // first range is the 12-token chunk
    ++length;
  }
  const RequestRoute* r = store.Current()->Find(5);
  // The 12-token prefill sits in range 0; later ranges hold at most 7 tokens each and walk
  // the nodes cyclically.
  ASSERT_GE(r->ranges.size(), 5u);
  EXPECT_EQ(r->ranges[0].end, 12);
  for (size_t i = 1; i + 1 < r->ranges.size(); ++i) {
    EXPECT_EQ(r->ranges[i].end - r->ranges[i].start, 7);
    EXPECT_NE(r->ranges[i].node, r->ranges[i - 1].node);
  }
  EXPECT_EQ(router.LiveTokens(0) + router.LiveTokens(1) + router.LiveTokens(2), 42);
  ASSERT_TRUE(router.RemoveRequest(5).ok());
  EXPECT_EQ(router.LiveTokens(0) + router.LiveTokens(1) + router.LiveTokens(2), 0);
  EXPECT_EQ(store.Current()->num_requests(), 0u);
}

// A step fails (its node died) and, before the request recovers, a joining node takes its
// tail: the spread sealed the tail at the end of the failed step. The rollback undoes that
// empty re-route, so the retry appends where the step started.
TEST(RouterTest, ARollbackUndoesAReRouteThatSealedTheFailedStep) {
  RouteStore store(1000);
  Router router(store, {.range_tokens_max = 1000});
  ASSERT_TRUE(router.AddNode({0, "", 10000}).ok());
  ASSERT_TRUE(router.AddRequest(1).ok());
  ASSERT_TRUE(router.PrepareStep(1, 0, 10).ok());  // prefill
  ASSERT_TRUE(router.PrepareStep(1, 10, 1).ok());  // the step that fails
  ASSERT_TRUE(router.AddNode({1, "", 10000}).ok());
  auto moved = router.SpreadTails(1);
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  ASSERT_EQ(moved->size(), 1u);
  ASSERT_EQ(store.Current()->Find(1)->tail().node, 1);
  ASSERT_EQ(store.Current()->Find(1)->tail().start, 11);
  ASSERT_TRUE(router.RollbackStep(1, 10).ok());
  const RequestRoute* r = store.Current()->Find(1);
  ASSERT_EQ(r->ranges.size(), 1u);
  EXPECT_TRUE(r->tail().open());
  EXPECT_EQ(r->tail().node, 0);
  EXPECT_EQ(router.Tails(0), 1);
  EXPECT_EQ(router.Tails(1), 0);
  EXPECT_EQ(router.LiveTokens(0), 10);
  EXPECT_EQ(router.LiveTokens(1), 0);
  auto retry = router.PrepareStep(1, 10, 1);
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  ASSERT_TRUE(Validate(**retry).ok()) << Validate(**retry).ToString();
  EXPECT_EQ((*retry)->Find(1)->tail().node, 0);
  EXPECT_EQ(router.LiveTokens(0), 11);
}

TEST(RouterTest, CutsRangesAtRangeTokensMaxAndFillsNodesToCapacity) {
  RouteStore store(8);
  Router router(store, {.range_tokens_max = 8});
  ASSERT_TRUE(router.AddNode({0, "", 10}).ok());
  ASSERT_TRUE(router.AddNode({1, "", 10}).ok());
  ASSERT_TRUE(router.AddRequest(1).ok());
  int64_t length = 0;
  for (int i = 0; i < 20; ++i) {
    auto s = router.PrepareStep(1, length, 1);
    ASSERT_TRUE(s.ok()) << i << ": " << s.status().ToString();
    ASSERT_TRUE(Validate(**s).ok());
    ++length;
  }
  // 20 tokens fill both nodes; the next one has nowhere to go.
  auto full = router.PrepareStep(1, length, 1);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(full.status().message().find("attention nodes full: need 1 tokens"), std::string::npos)
      << full.status().message();
  // Steps larger than a range and steps at the wrong position are refused.
  EXPECT_EQ(router.PrepareStep(1, length, 9).status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(router.PrepareStep(1, 3, 1).status().message().find("20 tokens are stored"),
            std::string::npos);
}

TEST(RouterTest, ManyRequestsSeededRandomStepsKeepTheTableValid) {
  RouteStore store(64);
  Router router(store, {.range_tokens_max = 64});
  for (int32_t n = 0; n < 4; ++n) ASSERT_TRUE(router.AddNode({n, "", 8000}).ok());
  core::Rng rng(11);
  std::vector<int64_t> len(40, 0);
  for (uint64_t id = 0; id < len.size(); ++id) ASSERT_TRUE(router.AddRequest(id).ok());
  for (int i = 0; i < 2000; ++i) {
    const uint64_t id = rng.Below(len.size());
    const int64_t n = 1 + static_cast<int64_t>(rng.Below(20));
    auto s = router.PrepareStep(id, len[id], n);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    len[id] += n;
    if (i % 97 == 0) {
      ASSERT_TRUE(Validate(**s).ok()) << Validate(**s).ToString();
    }
  }
  ASSERT_TRUE(Validate(*store.Current()).ok());
  int64_t total = 0;
  for (int64_t l : len) total += l;
  int64_t live = 0;
  for (int32_t n = 0; n < 4; ++n) live += router.LiveTokens(n);
  EXPECT_EQ(live, total);
}

}  // namespace
}  // namespace tessera::kernelflume
