// Inter-layer pipelining: the micro-batch split against brute-force enumeration; the two
// ping-ponged micro-batches against one micro-batch and the monolithic model on an
// AttentionCluster (fake transport, 1-3 nodes, tails re-routed every few tokens); the schedule's
// order; bad splits.
#include "kernelflume/pipelined_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "core/rng.h"
#include "core/tensor_error.h"
#include "kernelflume/attention_cluster.h"
#include "kernelflume/disaggregated_attention.h"
#include "kernelflume/generate_service.h"
#include "models/kv_cache.h"
#include "models/llama_test_util.h"
#include "models/sampler.h"

namespace tessera::kernelflume {
namespace {

// The best (larger sum, count gap) over every split into two non-empty sets.
std::pair<int64_t, int64_t> BruteForceBest(const std::vector<int64_t>& t) {
  const size_t n = t.size();
  std::pair<int64_t, int64_t> best{INT64_MAX, INT64_MAX};
  for (uint64_t mask = 1; mask + 1 < (uint64_t{1} << n); ++mask) {
    int64_t sa = 0, sb = 0, ca = 0, cb = 0;
    for (size_t i = 0; i < n; ++i) {
      if ((mask >> i) & 1) {
        sb += t[i], ++cb;
      } else {
        sa += t[i], ++ca;
      }
    }
    best = std::min(best, {std::max(sa, sb), std::abs(ca - cb)});
  }
  return best;
}

void ExpectPartition(const MicroBatchSplit& s, const std::vector<int64_t>& t) {
  std::vector<int64_t> all = s.a;
  all.insert(all.end(), s.b.begin(), s.b.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), t.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<int64_t>(i));
  int64_t sa = 0, sb = 0;
  for (int64_t i : s.a) sa += t[i];
  for (int64_t i : s.b) sb += t[i];
  EXPECT_EQ(s.tokens_a, sa);
  EXPECT_EQ(s.tokens_b, sb);
  EXPECT_TRUE(std::is_sorted(s.a.begin(), s.a.end()));
  EXPECT_TRUE(std::is_sorted(s.b.begin(), s.b.end()));
}

TEST(MicroBatchSplit, EqualsBruteForceOnSmallInstances) {
  core::Rng rng(17);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 2 + rng.Below(11);
    const uint64_t range = trial % 3 == 0 ? 5 : (trial % 3 == 1 ? 1000 : 200000);
    std::vector<int64_t> t(n);
    for (int64_t& x : t) x = static_cast<int64_t>(rng.Below(range));
    auto s = SplitByAttentionTokens(t);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    SCOPED_TRACE("trial " + std::to_string(trial));
    ExpectPartition(*s, t);
    EXPECT_FALSE(s->a.empty());
    EXPECT_FALSE(s->b.empty());
    const auto [larger, gap] = BruteForceBest(t);
    EXPECT_EQ(s->larger(), larger);
    EXPECT_EQ(std::abs(static_cast<int64_t>(s->a.size()) - static_cast<int64_t>(s->b.size())), gap);
  }
}

TEST(MicroBatchSplit, TheHeuristicBeyondTheExactLimitStaysWithinSevenSixths) {
  core::Rng rng(5);
  for (int trial = 0; trial < 6; ++trial) {
    const size_t n = kExactSplitMaxRequests + 1 + rng.Below(2);
    std::vector<int64_t> t(n);
    for (int64_t& x : t) x = static_cast<int64_t>(1 + rng.Below(100000));
    auto s = SplitByAttentionTokens(t);
    ASSERT_TRUE(s.ok());
    ExpectPartition(*s, t);
    const int64_t best = BruteForceBest(t).first;
    EXPECT_LE(static_cast<double>(s->larger()), 7.0 / 6.0 * static_cast<double>(best));
    EXPECT_GE(s->larger(), best);
  }
}

TEST(MicroBatchSplit, EdgeCasesAndBadInput) {
  auto one = SplitByAttentionTokens(std::vector<int64_t>{40});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->a, std::vector<int64_t>{0});
  EXPECT_TRUE(one->b.empty());
  auto lopsided = SplitByAttentionTokens(std::vector<int64_t>{1000, 1, 1, 1});
  ASSERT_TRUE(lopsided.ok());
  EXPECT_EQ(lopsided->larger(), 1000);
  auto bad = SplitByAttentionTokens(std::vector<int64_t>{3, -1});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("context_tokens[1]"), std::string::npos);
  EXPECT_DOUBLE_EQ(PipelineBound(1.0, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(PipelineBound(3.0, 1.0), 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(PipelineBound(0.0, 0.0), 1.0);
}

models::LlamaConfig SmallPipelineConfig(int64_t kv_heads) {
  models::LlamaConfig c = models::testing::SmallLlamaConfig(kv_heads, "pipeline-small");
  c.max_context = 256;
  return c;
}

// Two micro-batches ping-ponged, one micro-batch, and the monolithic model, teacher-forced with
// the monolithic greedy tokens: logits within 1e-5 relative, same greedy tokens.
// With `batched`, both decoded sets send their messages through a SendBatch.
void CheckPipelinedAgainstOneAndMonolithic(bool batched) {
  for (int64_t kv_heads : {4, 2}) {
    auto model = models::LlamaModel::FromSeed(SmallPipelineConfig(kv_heads), 9, 0.1f);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const int64_t vocab = model->config().vocab;
    for (int nodes : {1, 2, 3}) {
      SCOPED_TRACE("kv_heads " + std::to_string(kv_heads) + " nodes " + std::to_string(nodes) +
                   (batched ? " batched" : ""));
      AttentionClusterOptions o;
      o.num_nodes = nodes;
      o.page_tokens = 4;
      o.capacity_tokens = 4096;
      o.weight_node.router.reroute_every = 3 + nodes;
      auto cluster =
          AttentionCluster::Start(AttentionShapeOf(model->config()), model->Fingerprint(), o);
      ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
      WeightNode& wn = (*cluster)->weight_node();
      const int64_t b = 5;
      core::Rng rng(nodes * 10 + kv_heads);
      std::vector<std::unique_ptr<DisaggregatedAttention>> two, one;
      std::vector<std::unique_ptr<models::LocalKvCache>> mono;
      std::vector<int32_t> tokens(b);
      std::vector<int64_t> positions(b);
      std::vector<float> logits(vocab);
      for (int64_t i = 0; i < b; ++i) {
        std::vector<int32_t> prompt(2 + rng.Below(30));
        for (int32_t& t : prompt) t = static_cast<int32_t>(rng.Below(vocab));
        auto d2 = wn.OpenRequest(1 + i);
        auto d1 = wn.OpenRequest(101 + i);
        ASSERT_TRUE(d2.ok() && d1.ok());
        two.push_back(std::move(*d2));
        one.push_back(std::move(*d1));
        mono.push_back(std::make_unique<models::LocalKvCache>(model->config()));
        ASSERT_TRUE(model->Forward(prompt, 0, *two.back(), logits.data(), true).ok());
        ASSERT_TRUE(model->Forward(prompt, 0, *one.back(), logits.data(), true).ok());
        ASSERT_TRUE(model->Forward(prompt, 0, *mono.back(), logits.data(), true).ok());
        tokens[i] = models::Greedy(logits);
        positions[i] = static_cast<int64_t>(prompt.size());
      }
      std::vector<models::CoreAttention*> attn_two, attn_one;
      SendBatch batch_two(wn), batch_one(wn);
      for (int64_t i = 0; i < b; ++i) {
        attn_two.push_back(two[i].get());
        attn_one.push_back(one[i].get());
        if (batched) {
          two[i]->set_send_batch(&batch_two);
          one[i]->set_send_batch(&batch_one);
        }
      }
      PipelinedDecode pipelined(*model, batched ? &batch_two : nullptr);
      PipelinedDecode single(*model, batched ? &batch_one : nullptr);
      std::vector<float> got_two(b * vocab), got_one(b * vocab), want(vocab);
      for (int step = 0; step < 8; ++step) {
        auto split = SplitByAttentionTokens(positions);
        ASSERT_TRUE(split.ok());
        ASSERT_TRUE(pipelined.StepTwo(tokens, positions, attn_two, *split, got_two.data()).ok());
        ASSERT_TRUE(single.StepOne(tokens, positions, attn_one, got_one.data()).ok());
        for (int64_t i = 0; i < b; ++i) {
          ASSERT_TRUE(
              model->Forward(std::span(&tokens[i], 1), positions[i], *mono[i], want.data(), true)
                  .ok());
          const std::span<const float> r2(got_two.data() + i * vocab, vocab);
          const std::span<const float> r1(got_one.data() + i * vocab, vocab);
          EXPECT_LE(core::CompareTensors(r2, r1).max_rel, 1e-5) << "request " << i;
          EXPECT_LE(core::CompareTensors(r2, want).max_rel, 1e-5) << "request " << i;
          EXPECT_LE(core::CompareTensors(r1, want).max_rel, 1e-5) << "request " << i;
          EXPECT_EQ(models::Greedy(r2), models::Greedy(want)) << "request " << i;
          EXPECT_EQ(models::Greedy(r1), models::Greedy(want)) << "request " << i;
          tokens[i] = models::Greedy(want);
          ++positions[i];
        }
      }
      if (nodes > 1) {
        EXPECT_GT(wn.reroutes(), 0);
      }
      if (batched) {
        // Fewer sends than messages: each micro-batch's layer went out as one per node (how
        // many fewer depends on how the router spread the requests over the nodes).
        EXPECT_LT(batch_two.sends(), batch_two.messages_added());
        EXPECT_LT(batch_one.sends(), batch_one.messages_added());
      }
    }
  }
}

TEST(PipelinedDecode, TwoMicroBatchesEqualOneAndTheMonolithicModel) {
  CheckPipelinedAgainstOneAndMonolithic(false);
}

TEST(PipelinedDecode, BatchedMessagesGiveTheSameLogits) {
  CheckPipelinedAgainstOneAndMonolithic(true);
}

// A CoreAttention over a LocalKvCache that logs its calls as "<id>B<layer>" / "<id>F<layer>".
class LoggingAttention final : public models::CoreAttention {
 public:
  LoggingAttention(const models::LlamaConfig& c, int id, std::vector<std::string>* log)
      : cache_(c), id_(id), log_(log) {}
  core::Status BeginLayer(int64_t layer, int64_t pos0, int64_t num_tokens,
                          const float* q) override {
    log_->push_back(std::to_string(id_) + "B" + std::to_string(layer));
    return cache_.BeginLayer(layer, pos0, num_tokens, q);
  }
  core::Status FinishLayer(int64_t layer, const float* k, const float* v, float* o) override {
    log_->push_back(std::to_string(id_) + "F" + std::to_string(layer));
    return cache_.FinishLayer(layer, k, v, o);
  }

 private:
  models::LocalKvCache cache_;
  int id_;
  std::vector<std::string>* log_;
};

TEST(PipelinedDecode, RunsThePingPongScheduleAndRefusesBadSplits) {
  models::LlamaConfig c = SmallPipelineConfig(2);  // 2 layers
  auto model = models::LlamaModel::FromSeed(c, 4, 0.1f);
  ASSERT_TRUE(model.ok());
  std::vector<std::string> log;
  LoggingAttention r0(c, 0, &log), r1(c, 1, &log), r2(c, 2, &log);
  std::vector<models::CoreAttention*> attns = {&r0, &r1, &r2};
  std::vector<int32_t> tokens = {5, 6, 7};
  std::vector<int64_t> positions = {0, 0, 0};
  MicroBatchSplit split;
  split.a = {1};
  split.b = {0, 2};
  PipelinedDecode decode(*model);
  std::vector<float> logits(3 * c.vocab);
  ASSERT_TRUE(decode.StepTwo(tokens, positions, attns, split, logits.data()).ok());
  // A = {1}, B = {0, 2}: A.D0 B.D0 A.C0 A.D1 B.C0 B.D1 A.C1 B.C1.
  const std::vector<std::string> want = {"1B0", "0B0", "2B0", "1F0", "1B1", "0F0",
                                         "2F0", "0B1", "2B1", "1F1", "0F1", "2F1"};
  EXPECT_EQ(log, want);

  MicroBatchSplit empty_b;
  empty_b.a = {0, 1, 2};
  MicroBatchSplit repeated;
  repeated.a = {0, 1};
  repeated.b = {1};
  for (const MicroBatchSplit* s : {&empty_b, &repeated}) {
    const core::Status st = decode.StepTwo(tokens, positions, attns, *s, logits.data());
    EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("split"), std::string::npos) << st.ToString();
  }
}

}  // namespace
}  // namespace tessera::kernelflume
