// The autoscaling policy on hand-made load snapshots (each rule and its boundary), and the loop
// driving a live pool 1 -> N -> 1 under a decode whose tokens stay exact.
#include "kernelflume/autoscaler.h"

#include <gtest/gtest.h>

#include "core/rng.h"
#include "core/tensor_error.h"
#include "kernelflume/disaggregated_attention.h"
#include "kernelflume/generate_service.h"
#include "models/kv_cache.h"
#include "models/llama_test_util.h"
#include "models/sampler.h"

namespace tessera::kernelflume {
namespace {

using Kind = AutoscaleDecision::Kind;
using Load = WeightNode::NodeLoad;

std::vector<Load> Pool(std::vector<int64_t> live, int64_t capacity = 1000,
                       std::vector<double> busy = {}) {
  std::vector<Load> out;
  for (size_t i = 0; i < live.size(); ++i) {
    out.push_back(Load{static_cast<int32_t>(i), capacity, live[i], i < busy.size() ? busy[i] : 0});
  }
  return out;
}

TEST(AutoscalerTest, ScalesOutAboveTheKvBarWithACooldownAndAMaximum) {
  AutoscalerOptions o;
  o.max_nodes = 3;
  o.cooldown_s = 2;
  Autoscaler a(o);
  EXPECT_EQ(a.Decide(0, Pool({850, 850})).kind, Kind::kNone);  // exactly 0.85: not above
  AutoscaleDecision d = a.Decide(1, Pool({870, 870}));
  EXPECT_EQ(d.kind, Kind::kScaleOut);
  EXPECT_NEAR(d.kv_use, 0.87, 1e-12);
  EXPECT_NE(d.reason.find("kv use 0.87 > 0.85"), std::string::npos) << d.reason;
  a.NoteScaledOut(1);
  d = a.Decide(2, Pool({950, 950}));  // the new node has not joined yet
  EXPECT_EQ(d.kind, Kind::kNone);
  EXPECT_NE(d.reason.find("cooling down"), std::string::npos) << d.reason;
  d = a.Decide(3.5, Pool({950, 950, 800}));
  EXPECT_EQ(d.kind, Kind::kNone);  // 3 nodes is the maximum
  EXPECT_NE(d.reason.find("maximum"), std::string::npos) << d.reason;
}

TEST(AutoscalerTest, ScalesOutWhenANodeIsBusierThanItsShare) {
  Autoscaler a(AutoscalerOptions{});
  EXPECT_EQ(a.Decide(10, Pool({100, 100}, 1000, {5.0, 5.0})).kind, Kind::kNone);  // first tick
  // Over 2 s node 1 computed 1.6 s (0.8 > 0.7), node 0 0.2 s.
  AutoscaleDecision d = a.Decide(12, Pool({100, 100}, 1000, {5.2, 6.6}));
  EXPECT_EQ(d.kind, Kind::kScaleOut);
  EXPECT_NEAR(d.max_utilization, 0.8, 1e-9);
  EXPECT_NE(d.reason.find("node 1 busy 0.80"), std::string::npos) << d.reason;
  // 0.7 exactly is not above.
  Autoscaler b(AutoscalerOptions{});
  b.Decide(0, Pool({100}, 1000, {0}));
  EXPECT_EQ(b.Decide(1, Pool({100}, 1000, {0.7})).kind, Kind::kNone);
}

// Promised tokens (reservations of running and waiting requests) count as KV use before they
// are written: a queue waiting for KV makes the pool grow, and keeps it from shrinking.
TEST(AutoscalerTest, DemandCountsBeforeTheTokensAreWritten) {
  AutoscalerOptions o;
  o.keep_alive_s = 0;
  Autoscaler a(o);
  AutoscaleDecision d = a.Decide(0, Pool({100, 100}), 1800);  // 1800 / 2000 promised
  EXPECT_EQ(d.kind, Kind::kScaleOut);
  EXPECT_DOUBLE_EQ(d.kv_use, 0.9);
  Autoscaler b(o);
  EXPECT_EQ(b.Decide(0, Pool({100, 100}), 1000).kind, Kind::kNone);  // 0.5: neither
  EXPECT_EQ(b.Decide(1, Pool({100, 100}), 300).kind, Kind::kScaleIn);
  Autoscaler c(o);
  c.Decide(0, Pool({100, 100}), 1000);
  EXPECT_EQ(c.Decide(1, Pool({100, 100}), 1000).kind, Kind::kNone);  // demand 0.5 keeps it
}

TEST(AutoscalerTest, ScalesInTheEmptiestNodeAfterAKeepAliveOfLowUse) {
  AutoscalerOptions o;
  o.keep_alive_s = 30;
  Autoscaler a(o);
  EXPECT_EQ(a.Decide(0, Pool({100, 50, 300})).kind, Kind::kNone);  // low since 0
  EXPECT_EQ(a.Decide(29.9, Pool({100, 50, 300})).kind, Kind::kNone);
  AutoscaleDecision d = a.Decide(30, Pool({100, 50, 300}));
  EXPECT_EQ(d.kind, Kind::kScaleIn);
  EXPECT_EQ(d.node, 1);
  EXPECT_NE(d.reason.find("keep-alive 30 s"), std::string::npos) << d.reason;
  // A tick at 0.4 or above restarts the keep-alive.
  Autoscaler b(o);
  b.Decide(0, Pool({100, 100}));
  b.Decide(20, Pool({800, 0}));  // use 0.4: not low
  EXPECT_EQ(b.Decide(40, Pool({100, 100})).kind, Kind::kNone);
  EXPECT_EQ(b.Decide(70, Pool({100, 100})).kind, Kind::kScaleIn);
  // Never below min_nodes, and never when the rest would be over kv_high.
  o.min_nodes = 2;
  Autoscaler c(o);
  c.Decide(0, Pool({10, 10}));
  EXPECT_EQ(c.Decide(100, Pool({10, 10})).kind, Kind::kNone);
  o.min_nodes = 1;
  o.kv_low = 0.45;
  Autoscaler e(o);
  e.Decide(0, Pool({890, 0}));  // use 0.445 < 0.45, but one node would hold 0.89 > 0.85
  EXPECT_EQ(e.Decide(100, Pool({890, 0})).kind, Kind::kNone);
}

TEST(AutoscalerTest, OptionsAreValidated) {
  EXPECT_TRUE(ValidateAutoscalerOptions(AutoscalerOptions{}).ok());
  AutoscalerOptions o;
  o.kv_low = 0.9;
  EXPECT_NE(ValidateAutoscalerOptions(o).message().find("kv_low 0.9"), std::string::npos);
  o = AutoscalerOptions{};
  o.util_high = 0;
  EXPECT_NE(ValidateAutoscalerOptions(o).message().find("util_high"), std::string::npos);
  o = AutoscalerOptions{};
  o.min_nodes = 5;
  o.max_nodes = 2;
  EXPECT_NE(ValidateAutoscalerOptions(o).message().find("min_nodes 5"), std::string::npos);
}

// A pool of small nodes under a decode stepped in lockstep with the autoscaler's ticks: KV use
// passes 0.85 and the loop adds nodes; when the requests end it drains back to one node (keep-
// alive 0). Every request's logits stay within 1e-5 of the monolithic model's, greedy tokens
// equal.
TEST(AutoscalerTest, TheLoopTakesALivePoolOneToNAndBack) {
  models::LlamaConfig c = models::testing::SmallLlamaConfig(2, "test-autoscale");
  c.max_context = 512;
  auto model = models::LlamaModel::FromSeed(c, 21, 0.1f);
  ASSERT_TRUE(model.ok());
  AttentionClusterOptions co;
  co.num_nodes = 1;
  co.page_tokens = 8;
  co.capacity_tokens = 640;
  co.weight_node.router.reroute_every = 16;
  auto cluster = AttentionCluster::Start(AttentionShapeOf(c), model->Fingerprint(), co);
  ASSERT_TRUE(cluster.ok());
  AutoscalerOptions ao;
  ao.keep_alive_s = 0;
  ao.cooldown_s = 0;
  ao.max_nodes = 4;
  ao.util_high = 1.0;  // scale on KV use only: compute time is noise on a shared machine
  AutoscaleLoop loop(**cluster, ao, /*tick_s=*/0);
  WeightNode& wn = (*cluster)->weight_node();
  core::Rng rng(2);
  constexpr int kRequests = 4;
  std::vector<std::vector<int32_t>> tokens(kRequests, std::vector<int32_t>(100));
  std::vector<std::unique_ptr<DisaggregatedAttention>> dis;
  std::vector<std::unique_ptr<models::LocalKvCache>> mono;
  std::vector<float> logits(c.vocab), mono_logits(c.vocab);
  std::vector<std::vector<float>> last(kRequests);
  for (int r = 0; r < kRequests; ++r) {
    for (int32_t& t : tokens[r]) t = static_cast<int32_t>(rng.Below(259));
    auto d = wn.OpenRequest(r + 1);
    ASSERT_TRUE(d.ok());
    dis.push_back(std::move(*d));
    mono.push_back(std::make_unique<models::LocalKvCache>(c, 200));
    ASSERT_TRUE(ForwardWithRecovery(*model, *dis[r], tokens[r], 0, 100, logits.data(), true).ok());
    ASSERT_TRUE(model->Forward(tokens[r], 0, *mono[r], mono_logits.data(), true).ok());
    last[r] = logits;
  }
  size_t most_nodes = 1;
  for (int step = 0; step < 50; ++step) {
    for (int r = 0; r < kRequests; ++r) {
      tokens[r].push_back(models::Greedy(last[r]));
      const int64_t pos = static_cast<int64_t>(tokens[r].size()) - 1;
      core::Status st =
          ForwardWithRecovery(*model, *dis[r], tokens[r], pos, 1, logits.data(), true);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_TRUE(model
                      ->Forward(std::span(tokens[r]).subspan(pos, 1), pos, *mono[r],
                                mono_logits.data(), true)
                      .ok());
      EXPECT_LE(core::CompareTensors(logits, mono_logits).max_rel, 1e-5);
      EXPECT_EQ(models::Greedy(logits), models::Greedy(mono_logits));
      last[r] = logits;
    }
    ASSERT_TRUE(loop.Tick().ok());
    most_nodes = std::max(most_nodes, wn.active_nodes().size());
  }
  EXPECT_GE(most_nodes, 2u);
  EXPECT_GE(loop.scale_outs(), 1);
  dis.clear();  // the requests end: their KV is freed
  for (int i = 0; i < 8 && wn.active_nodes().size() > 1; ++i) ASSERT_TRUE(loop.Tick().ok());
  EXPECT_EQ(wn.active_nodes().size(), 1u);
  EXPECT_EQ(loop.scale_ins(), static_cast<int64_t>(most_nodes) - 1);
  int outs = 0, ins = 0;
  for (const ElasticEvent& e : wn.events()) {
    outs += e.kind == "scale-out";
    ins += e.kind == "scale-in";
  }
  EXPECT_EQ(outs, loop.scale_outs());
  EXPECT_EQ(ins, loop.scale_ins());
}

}  // namespace
}  // namespace tessera::kernelflume
