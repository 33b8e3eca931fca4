#include "kernelflume/routing_table.h"

#include <gtest/gtest.h>

#include <functional>

#include "kernelflume/route_delta.h"
#include "kernelflume/route_store.h"

namespace tessera::kernelflume {
namespace {

std::vector<AttentionNodeInfo> TwoNodes() {
  return {{0, "n0", 100, NodeState::kActive}, {1, "n1", 100, NodeState::kActive}};
}

// A valid table: request 7 with [0,10) on node 0, [10,20) on node 1, tail [20, 25) on node 0;
// request 8 with its tail [0, 3) on node 1.
std::vector<RequestRoute> GoodRequests() {
  RequestRoute a{7, 25, {{1, 0, 10, 0}, {2, 10, 20, 1}, {3, 20, kOpenTail, 0}}};
  RequestRoute b{8, 3, {{4, 0, kOpenTail, 1}}};
  return {a, b};
}

TEST(RoutingTableTest, AValidTableValidatesAndFindsRoutes) {
  auto t = AssembleRoutingTable(3, 16, TwoNodes(), {15, 13}, GoodRequests());
  ASSERT_TRUE(Validate(*t).ok()) << Validate(*t).ToString();
  ASSERT_NE(t->Find(7), nullptr);
  EXPECT_EQ(t->Find(7)->ranges.size(), 3u);
  EXPECT_EQ(t->Find(9), nullptr);
  EXPECT_EQ(t->num_requests(), 2u);
  EXPECT_EQ(t->NodeTokens(1), 13);
}

// Each broken invariant, one at a time, must be refused with a message naming it.
struct BreakCase {
  const char* name;
  std::function<void(std::vector<AttentionNodeInfo>&, std::vector<int64_t>&,
                     std::vector<RequestRoute>&, int64_t&)>
      mutate;
  const char* expect;
};

TEST(RoutingTableTest, ValidatorFailsOnEachBrokenInvariant) {
  const std::vector<BreakCase> cases = {
      {"no ranges", [](auto&, auto&, auto& r, auto&) { r[1].ranges.clear(); }, "has no range"},
      {"not from 0",
       [](auto&, auto& tok, auto& r, auto&) {
         r[1].ranges[0].start = 1;
         tok[1] -= 1;
       },
       "first range must start at 0"},
      {"gap", [](auto&, auto&, auto& r, auto&) { r[0].ranges[1].start = 11; },
       "previous range ends at 10"},
      {"overlap", [](auto&, auto&, auto& r, auto&) { r[0].ranges[1].start = 9; }, "contiguous"},
      {"sealed tail", [](auto&, auto&, auto& r, auto&) { r[0].ranges[2].end = 25; },
       "exactly one open tail"},
      {"open middle", [](auto&, auto&, auto& r, auto&) { r[0].ranges[1].end = kOpenTail; },
       "open but not last"},
      {"empty sealed",
       [](auto&, auto& tok, auto& r, auto&) {
         r[0].ranges[1].end = 10;
         r[0].ranges[2].start = 10;
         tok[1] -= 10;
         tok[0] += 10;
       },
       "sealed ranges hold >= 1 token"},
      {"tail beyond length", [](auto&, auto&, auto& r, auto&) { r[0].length = 19; },
       "beyond the length"},
      {"range too long", [](auto&, auto&, auto&, auto& rmax) { rmax = 9; },
       "more than range_tokens_max"},
      {"duplicate range id", [](auto&, auto&, auto& r, auto&) { r[1].ranges[0].range_id = 2; },
       "used twice"},
      {"unknown node", [](auto&, auto&, auto& r, auto&) { r[1].ranges[0].node = 5; },
       "not in the table"},
      {"lost node", [](auto& n, auto&, auto&, auto&) { n[1].state = NodeState::kLost; },
       "which is lost"},
      {"tail on draining", [](auto& n, auto&, auto&, auto&) { n[0].state = NodeState::kDraining; },
       "tails go to active nodes"},
      {"over capacity", [](auto& n, auto&, auto&, auto&) { n[0].capacity_tokens = 14; },
       "over its capacity_tokens"},
      {"token count off", [](auto&, auto& tok, auto&, auto&) { tok[0] = 14; },
       "node_tokens says 14"},
      {"duplicate node", [](auto& n, auto&, auto&, auto&) { n[1].id = 0; }, "appears twice"},
      {"zero capacity", [](auto& n, auto&, auto&, auto&) { n[1].capacity_tokens = 0; },
       "must be >= 1"},
  };
  for (const BreakCase& c : cases) {
    auto nodes = TwoNodes();
    std::vector<int64_t> tokens = {15, 13};
    auto reqs = GoodRequests();
    int64_t rmax = 16;
    c.mutate(nodes, tokens, reqs, rmax);
    auto t = AssembleRoutingTable(3, rmax, nodes, tokens, reqs);
    core::Status st = Validate(*t);
    EXPECT_FALSE(st.ok()) << c.name;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << c.name << ": " << st.message();
    EXPECT_NE(st.message().find("routing table v3"), std::string::npos) << st.message();
  }
}

TEST(RouteDeltaTest, EditsMakeAValidNextVersionAndShareUntouchedRoutes) {
  auto base = AssembleRoutingTable(3, 16, TwoNodes(), {15, 13}, GoodRequests());
  RouteDelta d(base);
  ASSERT_TRUE(d.SetLength(8, 9).ok());
  ASSERT_TRUE(d.Reroute(8, 0).ok());
  ASSERT_TRUE(d.AddRequest(100, 1).ok());
  auto next = d.Build();
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  const RoutingTable& t = **next;
  EXPECT_EQ(t.version(), 4u);
  ASSERT_TRUE(Validate(t).ok()) << Validate(t).ToString();
  const RequestRoute* r8 = t.Find(8);
  ASSERT_EQ(r8->ranges.size(), 2u);
  EXPECT_EQ(r8->ranges[0].end, 9);
  EXPECT_EQ(r8->ranges[1].start, 9);
  EXPECT_EQ(r8->ranges[1].node, 0);
  EXPECT_EQ(t.NodeTokens(1), 10 + 9);
  EXPECT_EQ(t.num_requests(), 3u);
  // Request 7 was not touched: the same object is shared by both versions.
  EXPECT_EQ(t.FindShared(7).get(), base->FindShared(7).get());
  // The base is unchanged.
  EXPECT_EQ(base->Find(8)->ranges.size(), 1u);
  EXPECT_EQ(base->Find(100), nullptr);
}

TEST(RouteDeltaTest, RefusesBadEditsAndInvariantBreaks) {
  auto base = AssembleRoutingTable(3, 16, TwoNodes(), {15, 13}, GoodRequests());
  RouteDelta d(base);
  EXPECT_NE(d.AddNode({1, "x", 5}).message().find("already in the routing table"),
            std::string::npos);
  EXPECT_NE(d.AddNode({2, "x", 0}).message().find("capacity_tokens: got 0"), std::string::npos);
  EXPECT_NE(d.AddRequest(7, 0).message().find("already routed"), std::string::npos);
  EXPECT_NE(d.AddRequest(9, 4).message().find("node 4 is not in"), std::string::npos);
  EXPECT_NE(d.SetLength(7, 3).message().find("never shrinks"), std::string::npos);
  EXPECT_EQ(d.Reroute(99, 0).code(), core::StatusCode::kNotFound);
  // A tail past range_tokens_max is refused at Build.
  ASSERT_TRUE(d.SetLength(7, 40).ok());
  auto built = d.Build();
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.status().message().find("more than range_tokens_max"), std::string::npos);
  // Capacity.
  RouteDelta c(base);
  ASSERT_TRUE(c.SetNodeState(0, NodeState::kActive).ok());
  ASSERT_TRUE(c.SetLength(8, 16).ok());
  ASSERT_TRUE(c.Reroute(8, 1).ok());
  ASSERT_TRUE(c.SetNodeState(1, NodeState::kActive).ok());
  EXPECT_TRUE(c.Build().ok());
  // Draining the node that holds a tail breaks that request: refused.
  RouteDelta dr(base);
  ASSERT_TRUE(dr.SetNodeState(1, NodeState::kDraining).ok());
  auto drained = dr.Build();
  ASSERT_FALSE(drained.ok());
  EXPECT_NE(drained.status().message().find("tails go to active nodes"), std::string::npos);
}

TEST(RouteDeltaTest, RemoveRequestFreesItsTokens) {
  auto base = AssembleRoutingTable(3, 16, TwoNodes(), {15, 13}, GoodRequests());
  RouteDelta d(base);
  ASSERT_TRUE(d.RemoveRequest(7).ok());
  auto next = d.Build();
  ASSERT_TRUE(next.ok());
  EXPECT_EQ((*next)->Find(7), nullptr);
  EXPECT_EQ((*next)->NodeTokens(0), 0);
  EXPECT_EQ((*next)->NodeTokens(1), 3);
  EXPECT_TRUE(Validate(**next).ok()) << Validate(**next).ToString();
}

TEST(RouteStoreTest, InstallsOnlyTheNextVersion) {
  RouteStore store(16);
  auto v1 = store.Current();
  EXPECT_EQ(v1->version(), 1u);
  RouteDelta d(v1);
  ASSERT_TRUE(d.AddNode({0, "n0", 10}).ok());
  auto v2 = d.Build();
  ASSERT_TRUE(v2.ok());
  ASSERT_TRUE(store.Install(*v2).ok());
  EXPECT_EQ(store.Current()->version(), 2u);
  // A table built from the stale v1 is refused.
  RouteDelta stale(v1);
  ASSERT_TRUE(stale.AddNode({1, "n1", 10}).ok());
  auto s = stale.Build();
  ASSERT_TRUE(s.ok());
  core::Status st = store.Install(*s);
  EXPECT_EQ(st.code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("does not follow the current version 2"), std::string::npos);
  // A reader's snapshot stays valid after later installs.
  auto held = store.Current();
  RouteDelta d3(held);
  ASSERT_TRUE(d3.AddRequest(1, 0).ok());
  ASSERT_TRUE(store.Install(*d3.Build()).ok());
  EXPECT_EQ(held->Find(1), nullptr);
  EXPECT_NE(store.Current()->Find(1), nullptr);
}

}  // namespace
}  // namespace tessera::kernelflume
