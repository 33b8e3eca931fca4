// Disaggregated core attention on in-process attention nodes vs the monolithic reference
// (every key in one place, kernels::PartialAttentionReference), for 1-7 nodes, MHA and GQA,
// and tails re-routed every k tokens; plus the failures a user sees (a lost node, a refused
// join).
#include "kernelflume/disaggregated_attention.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "core/tensor_error.h"
#include "kernelflume/attention_cluster.h"
#include "kernels/decode_attention.h"

namespace tessera::kernelflume {
namespace {

AttentionShape Shape(int32_t heads, int32_t kv_heads) {
  AttentionShape s;
  s.num_layers = 2;
  s.num_heads = heads;
  s.num_kv_heads = kv_heads;
  s.head_dim = 16;
  s.scale = 1.0f / 4.0f;
  return s;
}

std::unique_ptr<comm::AmTransport> FakeTransport() {
  auto t = comm::MakeAmTransport("fake");
  CHECK(t.ok());
  return std::move(*t);
}

std::vector<float> Random(core::Rng& rng, size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return v;
}

// Runs a request through `attn` (prefill chunks of 5 and 3 tokens, then single tokens up to
// `length`) and returns the worst relative error against the monolithic reference.
double RunAndCompare(const AttentionShape& s, models::CoreAttention& attn, int64_t length,
                     uint64_t seed) {
  core::Rng rng(seed);
  const int64_t h = s.num_heads, hkv = s.num_kv_heads, d = s.head_dim;
  std::vector<std::vector<float>> all_k(s.num_layers), all_v(s.num_layers);
  double worst = 0;
  int64_t pos = 0;
  while (pos < length) {
    const int64_t t = pos == 0 ? 5 : (pos == 5 ? 3 : 1);
    for (int32_t layer = 0; layer < s.num_layers; ++layer) {
      std::vector<float> q = Random(rng, t * h * d);
      std::vector<float> k = Random(rng, t * hkv * d), v = Random(rng, t * hkv * d);
      EXPECT_TRUE(attn.BeginLayer(layer, pos, t, q.data()).ok());
      std::vector<float> o(t * h * d);
      core::Status st = attn.FinishLayer(layer, k.data(), v.data(), o.data());
      EXPECT_TRUE(st.ok()) << st.ToString();
      if (!st.ok()) return INFINITY;
      all_k[layer].insert(all_k[layer].end(), k.begin(), k.end());
      all_v[layer].insert(all_v[layer].end(), v.begin(), v.end());
      kernels::DecodeAttentionShape shape;
      shape.num_q_tokens = t;
      shape.num_heads = h;
      shape.num_kv_heads = hkv;
      shape.head_dim = d;
      shape.scale = s.scale;
      shape.causal = true;
      kernels::KvSegment seg{all_k[layer].data(), all_v[layer].data(), pos + t, hkv * d, d};
      std::vector<float> ref(t * h * d), lse(t * h);
      EXPECT_TRUE(kernels::PartialAttentionReference(shape, q.data(), std::span(&seg, 1),
                                                     ref.data(), lse.data())
                      .ok());
      worst = std::max(worst, core::CompareTensors(o, ref).max_rel);
    }
    pos += t;
  }
  return worst;
}

TEST(DisaggregatedAttentionTest, MatchesTheMonolithicReferenceFor1To7NodesAndReroutes) {
  for (int32_t kv_heads : {4, 2}) {
    for (int nodes : {1, 2, 3, 7}) {
      for (int64_t k : {1, 7, 64}) {
        AttentionClusterOptions o;
        o.num_nodes = nodes;
        o.page_tokens = 4;
        o.capacity_tokens = 4096;
        o.weight_node.router.reroute_every = k;
        auto cluster = AttentionCluster::Start(Shape(4, kv_heads), "fp", o);
        ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
        auto attn = (*cluster)->weight_node().OpenRequest(1);
        ASSERT_TRUE(attn.ok());
        const double err = RunAndCompare(Shape(4, kv_heads), **attn, 40, 100 + nodes);
        EXPECT_LE(err, 1e-5) << "kv_heads " << kv_heads << " nodes " << nodes << " k " << k;
        const auto table = (*cluster)->weight_node().routes();
        ASSERT_TRUE(Validate(*table).ok());
        // Re-routing really spread the request: with k = 1, 40 tokens span many ranges.
        if (k == 1) {
          EXPECT_GE(table->Find(1)->ranges.size(), 30u);
        }
      }
    }
  }
}

// History stored by AppendOnly (chunks over two nodes and re-routes), then one normal step:
// its output equals the reference over all positions, like a step after real prefill.
TEST(DisaggregatedAttentionTest, AppendOnlyHistoryServesLaterSteps) {
  const AttentionShape s = Shape(4, 2);
  AttentionClusterOptions o;
  o.num_nodes = 2;
  o.page_tokens = 4;
  o.capacity_tokens = 4096;
  o.weight_node.router.reroute_every = 7;
  auto cluster = AttentionCluster::Start(s, "fp", o);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  auto attn = (*cluster)->weight_node().OpenRequest(1);
  ASSERT_TRUE(attn.ok());
  core::Rng rng(7);
  const int64_t h = s.num_heads, hkv = s.num_kv_heads, d = s.head_dim, history = 37;
  std::vector<std::vector<float>> all_k(s.num_layers), all_v(s.num_layers);
  for (int64_t pos = 0; pos < history;) {
    const int64_t t = std::min<int64_t>(10, history - pos);
    for (int32_t layer = 0; layer < s.num_layers; ++layer) {
      const std::vector<float> k = Random(rng, t * hkv * d), v = Random(rng, t * hkv * d);
      ASSERT_TRUE((*attn)->AppendOnly(layer, pos, t, k.data(), v.data()).ok());
      all_k[layer].insert(all_k[layer].end(), k.begin(), k.end());
      all_v[layer].insert(all_v[layer].end(), v.begin(), v.end());
    }
    pos += t;
  }
  // A layer of another step is refused.
  EXPECT_EQ((*attn)->AppendOnly(1, 0, 1, all_k[0].data(), all_v[0].data()).code(),
            core::StatusCode::kFailedPrecondition);
  for (int32_t layer = 0; layer < s.num_layers; ++layer) {
    const std::vector<float> q = Random(rng, h * d);
    const std::vector<float> k = Random(rng, hkv * d), v = Random(rng, hkv * d);
    ASSERT_TRUE((*attn)->BeginLayer(layer, history, 1, q.data()).ok());
    std::vector<float> out(h * d);
    const core::Status st = (*attn)->FinishLayer(layer, k.data(), v.data(), out.data());
    ASSERT_TRUE(st.ok()) << st.ToString();
    all_k[layer].insert(all_k[layer].end(), k.begin(), k.end());
    all_v[layer].insert(all_v[layer].end(), v.begin(), v.end());
    kernels::DecodeAttentionShape shape;
    shape.num_q_tokens = 1;
    shape.num_heads = h;
    shape.num_kv_heads = hkv;
    shape.head_dim = d;
    shape.scale = s.scale;
    kernels::KvSegment seg{all_k[layer].data(), all_v[layer].data(), history + 1, hkv * d, d};
    std::vector<float> ref(h * d), lse(h);
    ASSERT_TRUE(kernels::PartialAttentionReference(shape, q.data(), std::span(&seg, 1), ref.data(),
                                                   lse.data())
                    .ok());
    EXPECT_LE(core::CompareTensors(out, ref).max_rel, 1e-5) << "layer " << layer;
  }
}

TEST(DisaggregatedAttentionTest, RequestsRunSideBySideAndFreeTheirRanges) {
  AttentionClusterOptions o;
  o.num_nodes = 3;
  o.page_tokens = 4;
  o.capacity_tokens = 4096;
  o.weight_node.router.reroute_every = 7;
  auto cluster = AttentionCluster::Start(Shape(4, 2), "fp", o);
  ASSERT_TRUE(cluster.ok());
  {
    auto a = (*cluster)->weight_node().OpenRequest(1);
    auto b = (*cluster)->weight_node().OpenRequest(2);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_LE(RunAndCompare(Shape(4, 2), **a, 20, 1), 1e-5);
    EXPECT_LE(RunAndCompare(Shape(4, 2), **b, 30, 2), 1e-5);
    EXPECT_EQ((*cluster)->weight_node().routes()->num_requests(), 2u);
  }
  EXPECT_EQ((*cluster)->weight_node().routes()->num_requests(), 0u);
}

TEST(DisaggregatedAttentionTest, ALostNodeFailsTheStepNamingIt) {
  AttentionClusterOptions o;
  o.num_nodes = 2;
  o.page_tokens = 4;
  o.capacity_tokens = 4096;
  o.weight_node.router.reroute_every = 3;
  o.weight_node.reply_timeout_s = 30;
  const AttentionShape s = Shape(4, 2);
  auto cluster = AttentionCluster::Start(s, "fp", o);
  ASSERT_TRUE(cluster.ok());
  auto attn = (*cluster)->weight_node().OpenRequest(1);
  ASSERT_TRUE(attn.ok());
  EXPECT_LE(RunAndCompare(s, **attn, 12, 3), 1e-5);
  (*cluster)->KillNode(1);
  core::Rng rng(4);
  std::vector<float> q = Random(rng, 4 * 16), k = Random(rng, 2 * 16), o_buf(4 * 16);
  core::Status st = (*attn)->BeginLayer(0, 12, 1, q.data());
  if (st.ok()) st = (*attn)->FinishLayer(0, k.data(), k.data(), o_buf.data());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), core::StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("attention node 1"), std::string::npos) << st.message();
}

TEST(DisaggregatedAttentionTest, JoinsOfAnotherModelOrADuplicateIdAreRefused) {
  AttentionClusterOptions o;
  o.num_nodes = 1;
  auto cluster = AttentionCluster::Start(Shape(4, 2), "fp-a", o);
  ASSERT_TRUE(cluster.ok());
  const std::string address = (*cluster)->weight_node().address();
  AttentionNodeOptions other;
  other.node_id = 5;
  other.capacity_tokens = 100;
  other.fingerprint = "fp-b";
  auto refused = AttentionNode::Join(FakeTransport(), address, other);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("model fingerprint fp-b"), std::string::npos)
      << refused.status().message();
  AttentionNodeOptions dup;
  dup.node_id = 0;
  dup.capacity_tokens = 100;
  auto dup_join = AttentionNode::Join(FakeTransport(), address, dup);
  ASSERT_FALSE(dup_join.ok());
  EXPECT_NE(dup_join.status().message().find("id 0 is already taken"), std::string::npos);
  AttentionNodeOptions zero;
  zero.capacity_tokens = 0;
  auto zero_join = AttentionNode::Join(FakeTransport(), address, zero);
  ASSERT_FALSE(zero_join.ok());
  EXPECT_NE(zero_join.status().message().find("capacity_tokens: got 0"), std::string::npos);
}

}  // namespace
}  // namespace tessera::kernelflume
