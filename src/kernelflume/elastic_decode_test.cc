// KernelFlume's elasticity under a live decode: nodes join (tails spread onto them), sealed
// ranges migrate by one-sided reads, a node drains and retires, a node dies -- and every
// request's teacher-forced logits stay within 1e-5 of the monolithic model's with equal greedy
// tokens; afterwards no node holds a range (nothing leaks).
#include "kernelflume/elastic_decode.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "core/rng.h"
#include "models/llama_test_util.h"

namespace tessera::kernelflume {
namespace {

models::LlamaConfig ElasticConfig() {
  models::LlamaConfig c = models::testing::SmallLlamaConfig(2, "test-elastic");
  c.max_context = 512;
  return c;
}

std::vector<std::vector<int32_t>> Prompts(uint64_t seed, int count) {
  core::Rng rng(seed);
  std::vector<std::vector<int32_t>> out(count);
  for (auto& p : out) {
    p.resize(20 + rng.Below(60));
    for (int32_t& t : p) t = static_cast<int32_t>(rng.Below(259));
  }
  return out;
}

std::unique_ptr<AttentionCluster> StartCluster(const models::LlamaModel& model, int nodes,
                                               int64_t reroute_every,
                                               const std::string& transport = "fake",
                                               int refill_nice = 0) {
  AttentionClusterOptions o;
  o.transport = transport;
  o.num_nodes = nodes;
  o.page_tokens = 8;
  o.capacity_tokens = 8192;
  o.weight_node.router.reroute_every = reroute_every;
  o.weight_node.refill_nice = refill_nice;
  auto cluster = AttentionCluster::Start(AttentionShapeOf(model.config()), model.Fingerprint(), o);
  EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
  return cluster.ok() ? std::move(*cluster) : nullptr;
}

std::multiset<std::string> EventKinds(const ElasticDecodeReport& r) {
  std::multiset<std::string> kinds;
  for (const ElasticEvent& e : r.events) kinds.insert(e.kind);
  return kinds;
}

class ElasticDecodeOnTransport : public ::testing::TestWithParam<std::string> {};

// On "fake" (in-process transports) and "ucx" (real UCX endpoints in this process: migration
// pages move by ucp_get; a killed node's endpoints fail).
TEST_P(ElasticDecodeOnTransport, JoinMigrateDrainAndKillKeepEveryRequestExact) {
  auto model = models::LlamaModel::FromSeed(ElasticConfig(), 11, 0.1f);
  ASSERT_TRUE(model.ok());
  auto cluster = StartCluster(*model, 3, 6, GetParam());
  ASSERT_NE(cluster, nullptr);
  ElasticDecodeOptions o;
  o.max_tokens = 40;
  for (const char* a : {"join@20", "migrate:x3@50", "drain:1@80", "kill:0@110"}) {
    auto action = ParseElasticAction(a);
    ASSERT_TRUE(action.ok()) << action.status().ToString();
    o.actions.push_back(*action);
  }
  auto report = RunElasticDecode(*model, *cluster, Prompts(5, 5), o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(ElasticVerdict(*report).ok()) << ElasticVerdict(*report).ToString();
  EXPECT_LE(report->max_rel_err, 1e-5);
  EXPECT_EQ(report->mismatched_requests, 0);
  EXPECT_EQ(report->generated_tokens, 5 * 40);
  ASSERT_EQ(report->actions.size(), 4u);
  EXPECT_EQ(report->actions[0].node, 3);  // the joined node's id
  EXPECT_GE(report->actions[1].ranges_moved, 1);
  const std::multiset<std::string> kinds = EventKinds(*report);
  for (const char* k : {"join", "spread", "migrate", "drain", "retire", "lost", "fence"}) {
    EXPECT_GE(kinds.count(k), 1u) << k;
  }
  // Node 0 held ranges of every request (re-routes every 6 tokens walk all nodes), so killing
  // it forced re-prefills.
  EXPECT_GE(kinds.count("refill"), 1u);
  int64_t recoveries = 0;
  for (const ElasticRequestResult& r : report->requests) recoveries += r.recoveries;
  EXPECT_GE(recoveries, 1);
  // The joined node got tails: tokens were appended to it.
  EXPECT_GT(cluster->node_stats()[3].appends, 0);
  // Nothing leaks: every request closed, no range left on any live node (the frees travel
  // asynchronously: wait for them, up to 30 s, so a slow machine is not a failure).
  EXPECT_EQ(cluster->weight_node().routes()->num_requests(), 0u);
  auto held = [&] {
    int64_t n = 0;
    const std::vector<AttentionNodeStats> s = cluster->node_stats();
    for (size_t i = 1; i < s.size(); ++i) n += s[i].ranges;
    return n;
  };
  for (int i = 0; i < 3000 && held() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<AttentionNodeStats> stats = cluster->node_stats();
  for (size_t i = 0; i < stats.size(); ++i) {
    if (i == 0) continue;  // killed
    EXPECT_EQ(stats[i].ranges, 0) << "node " << i;
  }
  EXPECT_GE(stats[3].ranges_imported + stats[2].ranges_imported, 1);
}

INSTANTIATE_TEST_SUITE_P(Transports, ElasticDecodeOnTransport,
                         ::testing::Values(std::string("fake"), std::string("ucx")));

// The re-prefill on the request's thread, and on a thread of its own at a lower priority
// (WeightNodeOptions::refill_nice): the same forwards, so the same exactness.
TEST(ElasticDecodeTest, DeathWithoutAChangeElseStillExactAndUnaffectedRequestsNeverRecover) {
  auto model = models::LlamaModel::FromSeed(ElasticConfig(), 12, 0.1f);
  ASSERT_TRUE(model.ok());
  for (int refill_nice : {0, 10}) {
    SCOPED_TRACE(testing::Message() << "refill_nice " << refill_nice);
    // No periodic re-routes: each request's single tail sits on one node; killing node 1
    // affects only the requests whose tail is there.
    auto cluster = StartCluster(*model, 3, 0, "fake", refill_nice);
    ASSERT_NE(cluster, nullptr);
    ElasticDecodeOptions o;
    o.max_tokens = 24;
    o.actions.push_back(*ParseElasticAction("kill:1@30"));
    auto report = RunElasticDecode(*model, *cluster, Prompts(9, 6), o);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_TRUE(ElasticVerdict(*report).ok()) << ElasticVerdict(*report).ToString();
    int64_t recovered = 0, clean = 0;
    for (const ElasticRequestResult& r : report->requests) {
      (r.recoveries > 0 ? recovered : clean)++;
    }
    EXPECT_GE(recovered, 1);
    EXPECT_GE(clean, 1);
    ASSERT_EQ(report->actions.size(), 1u);
    // Exactly the requests that had a range on node 1 recovered.
    for (size_t i = 0; i < report->requests.size(); ++i) {
      const std::vector<uint64_t>& hit = report->actions[0].affected_requests;
      const bool affected = std::find(hit.begin(), hit.end(), i + 1) != hit.end();
      EXPECT_EQ(report->requests[i].recoveries > 0, affected) << "request " << i + 1;
    }
  }
}

TEST(ElasticDecodeTest, RefusesTheLastNodesDrainAndBadActions) {
  auto model = models::LlamaModel::FromSeed(ElasticConfig(), 13, 0.1f);
  ASSERT_TRUE(model.ok());
  auto cluster = StartCluster(*model, 1, 0);
  ASSERT_NE(cluster, nullptr);
  core::Status st = cluster->weight_node().DrainNode(0, 5);
  EXPECT_EQ(st.code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("last active node"), std::string::npos) << st.message();
  for (const char* bad :
       {"join", "kill@3", "drain:x@1", "migrate:1@2", "explode:1@2", "join@-1", "kill:1@"}) {
    auto a = ParseElasticAction(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_NE(a.status().message().find(bad), std::string::npos) << a.status().message();
  }
  // The only node dies under a live request: it fails naming the lost node, no hang.
  ElasticDecodeOptions o;
  o.max_tokens = 400;  // long enough that the kill lands mid-run
  o.actions.push_back(*ParseElasticAction("kill:0@3"));
  auto report = RunElasticDecode(*model, *cluster, Prompts(3, 1), o);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("attention node 0"), std::string::npos)
      << report.status().message();
  // A new request with every node gone is refused as unavailable.
  auto late = cluster->weight_node().OpenRequest(99);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), core::StatusCode::kUnavailable);
  EXPECT_NE(late.status().message().find("no active attention node"), std::string::npos)
      << late.status().message();
}

}  // namespace
}  // namespace tessera::kernelflume
