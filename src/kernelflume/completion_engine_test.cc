// The serving loop: concurrent requests batched into one forward per step give exactly the
// monolithic model's greedy tokens (also while a node dies under them); a cancelled request
// frees its ranges on every node; every refusal names its field.
#include "kernelflume/completion_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/rng.h"
#include "kernelflume/disaggregated_attention.h"
#include "kernelflume/generate_service.h"
#include "kernelflume/kernelflume_test_util.h"
#include "models/kv_cache.h"
#include "models/llama_test_util.h"
#include "models/sampler.h"

namespace tessera::kernelflume {
namespace {

models::LlamaConfig EngineConfig() {
  models::LlamaConfig c = models::testing::SmallLlamaConfig(2, "test-engine");
  c.max_context = 256;
  return c;
}

std::unique_ptr<AttentionCluster> StartEngineCluster(const models::LlamaModel& model, int nodes,
                                                     int64_t capacity = 4096) {
  AttentionClusterOptions o;
  o.num_nodes = nodes;
  o.page_tokens = 8;
  o.capacity_tokens = capacity;
  o.weight_node.router.reroute_every = 8;
  auto c = AttentionCluster::Start(AttentionShapeOf(model.config()), model.Fingerprint(), o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

// All of a stream's tokens until it ends (or 60 s pass: a hang fails, not blocks, the test).
struct Drained {
  std::vector<int32_t> tokens;
  std::vector<int64_t> iterations;  // the scheduler iteration of each token
  std::string finish;
  core::Status error;
};
Drained Drain(CompletionStream& s) {
  Drained d;
  for (int i = 0; i < 600; ++i) {
    auto e = s.Next(0.1);
    if (!e) continue;
    if (e->kind == CompletionStream::Event::Kind::kToken) {
      d.tokens.push_back(e->token);
      d.iterations.push_back(e->iteration);
      i = 0;
    } else if (e->kind == CompletionStream::Event::Kind::kDone) {
      d.finish = e->finish_reason;
      return d;
    } else {
      d.error = e->error;
      return d;
    }
  }
  d.error = core::DeadlineExceeded("no event for 60 s");
  return d;
}

std::vector<std::vector<int32_t>> EnginePrompts(uint64_t seed, int n) {
  core::Rng rng(seed);
  std::vector<std::vector<int32_t>> out(n);
  for (auto& p : out) {
    p.resize(5 + rng.Below(40));
    for (int32_t& t : p) t = static_cast<int32_t>(rng.Below(256));
  }
  return out;
}

TEST(CompletionEngineTest, ConcurrentRequestsGiveTheMonolithicGreedyTokens) {
  auto model = models::LlamaModel::FromSeed(EngineConfig(), 31, 0.1f);
  ASSERT_TRUE(model.ok());
  auto cluster = StartEngineCluster(*model, 2);
  ASSERT_NE(cluster, nullptr);
  CompletionEngine engine(*model, *cluster, EngineOptions{});
  const auto prompts = EnginePrompts(4, 6);
  std::vector<std::shared_ptr<CompletionStream>> streams;
  for (size_t i = 0; i < prompts.size(); ++i) {
    CompletionParams p;
    p.prompt = prompts[i];
    p.max_tokens = 10 + static_cast<int64_t>(i) * 3;
    p.stop_at_eos = false;
    auto s = engine.Submit(p);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    streams.push_back(*s);
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Drained d = Drain(*streams[i]);
    ASSERT_TRUE(d.error.ok()) << d.error.ToString();
    EXPECT_EQ(d.finish, "length");
    EXPECT_EQ(d.tokens,
              testing::MonolithicGreedy(*model, prompts[i], 10 + static_cast<int64_t>(i) * 3))
        << "request " << i;
  }
  const EngineMetrics m = engine.Metrics();
  EXPECT_EQ(m.completed, 6);
  EXPECT_EQ(m.failed, 0);
  EXPECT_EQ(m.nodes, 2);
  int64_t asked = 0;
  for (size_t i = 0; i < prompts.size(); ++i) asked += 10 + static_cast<int64_t>(i) * 3;
  EXPECT_EQ(m.tokens, asked);  // every token counted in the metrics
}

// Chunked prefill: with 7 prompt tokens per step, a 200-token prompt B is prefilled over 29
// scheduler iterations, and request A, submitted just before it, gets a token in each of them
// once its own short prompt is in (not one gap of B's whole prefill); both stay equal to the
// monolithic model. Judged on the iterations stamped on the events, not on timing.
TEST(CompletionEngineTest, ALongPromptIsPrefilledBetweenTheRunningRequestsSteps) {
  auto model = models::LlamaModel::FromSeed(EngineConfig(), 33, 0.1f);
  ASSERT_TRUE(model.ok());
  auto cluster = StartEngineCluster(*model, 2);
  ASSERT_NE(cluster, nullptr);
  EngineOptions eo;
  eo.prefill_tokens_per_step = 7;
  CompletionEngine engine(*model, *cluster, eo);
  const auto prompts = EnginePrompts(6, 2);
  CompletionParams a;
  a.prompt = prompts[0];
  a.max_tokens = 150;
  a.stop_at_eos = false;
  core::Rng rng(9);
  CompletionParams b;
  for (int i = 0; i < 200; ++i) b.prompt.push_back(static_cast<int32_t>(rng.Below(256)));
  b.max_tokens = 4;
  b.stop_at_eos = false;
  auto sa = engine.Submit(a);
  ASSERT_TRUE(sa.ok()) << sa.status().ToString();
  auto sb = engine.Submit(b);
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  const Drained da = Drain(**sa);
  const Drained db = Drain(**sb);
  ASSERT_TRUE(da.error.ok()) << da.error.ToString();
  ASSERT_TRUE(db.error.ok()) << db.error.ToString();
  EXPECT_EQ(da.tokens, testing::MonolithicGreedy(*model, a.prompt, 150));
  EXPECT_EQ(db.tokens, testing::MonolithicGreedy(*model, b.prompt, 4));
  ASSERT_EQ(db.iterations.size(), 4u);
  const int64_t admitted_b = (*sb)->admitted_iteration();
  const int64_t first_b = db.iterations[0];
  ASSERT_GT(admitted_b, 0);
  // B's prefill spans at least ceil(200 / 7) iterations from its admission (A's prompt, ahead
  // of it, takes part of the first budgets).
  EXPECT_GE(first_b - admitted_b + 1, (200 + 6) / 7);
  int64_t a_during = 0;
  for (int64_t it : da.iterations) a_during += it >= admitted_b && it < first_b;
  const int64_t a_prefill = (static_cast<int64_t>(a.prompt.size()) + 6) / 7;
  EXPECT_GE(a_during, first_b - admitted_b - a_prefill)
      << "A got " << a_during << " tokens in the " << first_b - admitted_b
      << " iterations before B's first token";
  EXPECT_EQ(engine.DemandTokens(), 0);  // every reservation returned
}

// A batched step fails as a whole: a request whose own step had finished before another's
// failed is recovered to the position before it and its step retried. (Found under load: the
// retry was refused with "step starts at position 27, but 28 tokens are stored".)
TEST(CompletionEngineTest, AFinishedStepOfAFailedBatchIsForgottenOnRecover) {
  auto model = models::LlamaModel::FromSeed(EngineConfig(), 35, 0.1f);
  ASSERT_TRUE(model.ok());
  auto cluster = StartEngineCluster(*model, 2);
  ASSERT_NE(cluster, nullptr);
  auto attn = cluster->weight_node().OpenRequest(1);
  ASSERT_TRUE(attn.ok()) << attn.status().ToString();
  std::vector<int32_t> tokens = EnginePrompts(9, 1)[0];
  const int64_t n = static_cast<int64_t>(tokens.size());
  tokens.push_back(7);
  std::vector<float> logits(model->config().vocab), first(model->config().vocab);
  ASSERT_TRUE(ForwardWithRecovery(*model, **attn, tokens, 0, n, logits.data(), true).ok());
  ASSERT_TRUE(
      model->Forward(std::span<const int32_t>(tokens).subspan(n, 1), n, **attn, first.data(), true)
          .ok());
  // The batch it ran in failed: forget the finished step and run it again.
  ASSERT_TRUE((*attn)->Recover(*model, std::span<const int32_t>(tokens).first(n)).ok());
  const core::Status again = model->Forward(std::span<const int32_t>(tokens).subspan(n, 1), n,
                                            **attn, logits.data(), true);
  ASSERT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(logits, first);
  // Recovering to where the finished step left off keeps it: the next step follows it.
  ASSERT_TRUE((*attn)->Recover(*model, tokens).ok());
  tokens.push_back(9);
  EXPECT_TRUE(model
                  ->Forward(std::span<const int32_t>(tokens).subspan(n + 1, 1), n + 1, **attn,
                            logits.data(), true)
                  .ok());
}

TEST(CompletionEngineTest, ANodeDyingUnderTheBatchLosesNoRequest) {
  auto model = models::LlamaModel::FromSeed(EngineConfig(), 32, 0.1f);
  ASSERT_TRUE(model.ok());
  auto cluster = StartEngineCluster(*model, 3);
  ASSERT_NE(cluster, nullptr);
  CompletionEngine engine(*model, *cluster, EngineOptions{});
  const auto prompts = EnginePrompts(5, 4);
  std::vector<std::shared_ptr<CompletionStream>> streams;
  for (const auto& prompt : prompts) {
    CompletionParams p;
    p.prompt = prompt;
    p.max_tokens = 150;
    p.stop_at_eos = false;
    streams.push_back(*engine.Submit(p));
  }
  // Kill node 1 once the first request has produced a few tokens.
  std::vector<int32_t> first;
  for (int i = 0; i < 600 && first.size() < 5; ++i) {
    auto e = streams[0]->Next(0.1);
    if (e && e->kind == CompletionStream::Event::Kind::kToken) first.push_back(e->token);
  }
  cluster->KillNode(1);
  Drained rest = Drain(*streams[0]);
  ASSERT_TRUE(rest.error.ok()) << rest.error.ToString();
  first.insert(first.end(), rest.tokens.begin(), rest.tokens.end());
  EXPECT_EQ(first, testing::MonolithicGreedy(*model, prompts[0], 150));
  for (size_t i = 1; i < prompts.size(); ++i) {
    const Drained d = Drain(*streams[i]);
    ASSERT_TRUE(d.error.ok()) << d.error.ToString();
    EXPECT_EQ(d.tokens, testing::MonolithicGreedy(*model, prompts[i], 150)) << "request " << i;
  }
  // The kill hit the live batch: node 1 held ranges (tails move every 8 tokens), so some
  // were re-prefilled.
  int refills = 0;
  for (const ElasticEvent& e : cluster->weight_node().events()) refills += e.kind == "refill";
  EXPECT_GE(refills, 1);
  EXPECT_EQ(engine.Metrics().failed, 0);
}

TEST(CompletionEngineTest, ACancelledRequestFreesItsRangesOnEveryNode) {
  auto model = models::LlamaModel::FromSeed(EngineConfig(), 33, 0.1f);
  ASSERT_TRUE(model.ok());
  auto cluster = StartEngineCluster(*model, 2);
  ASSERT_NE(cluster, nullptr);
  CompletionEngine engine(*model, *cluster, EngineOptions{});
  CompletionParams p;
  p.prompt = EnginePrompts(6, 1)[0];
  p.max_tokens = 200;
  p.stop_at_eos = false;
  auto s = engine.Submit(p);
  ASSERT_TRUE(s.ok());
  for (int got = 0, i = 0; got < 3 && i < 600; ++i) {
    auto e = (*s)->Next(0.1);
    got += e && e->kind == CompletionStream::Event::Kind::kToken;
  }
  (*s)->Cancel();
  const Drained d = Drain(**s);
  EXPECT_EQ(d.finish, "cancelled");
  EXPECT_EQ(engine.Metrics().cancelled, 1);
  EXPECT_EQ(cluster->weight_node().routes()->num_requests(), 0u);
  auto held = [&] {
    int64_t n = 0;
    for (const AttentionNodeStats& st : cluster->node_stats()) n += st.ranges;
    return n;
  };
  for (int i = 0; i < 3000 && held() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(held(), 0);
}

TEST(CompletionEngineTest, RefusalsNameTheFieldOrTheReason) {
  auto model = models::LlamaModel::FromSeed(EngineConfig(), 34, 0.1f);
  ASSERT_TRUE(model.ok());
  auto cluster = StartEngineCluster(*model, 1, 512);
  ASSERT_NE(cluster, nullptr);
  EngineOptions eo;
  eo.max_queued = 1;
  eo.max_active = 1;
  eo.max_nodes = 1;
  CompletionEngine engine(*model, *cluster, eo);
  auto refused = [&](CompletionParams p) { return engine.Submit(std::move(p)).status(); };
  CompletionParams ok;
  ok.prompt = {1, 2, 3};
  CompletionParams bad = ok;
  bad.prompt.clear();
  EXPECT_NE(refused(bad).message().find("prompt: empty"), std::string::npos);
  bad = ok;
  bad.prompt = {1, 300};
  EXPECT_NE(refused(bad).message().find("token 300 at position 1"), std::string::npos);
  bad = ok;
  bad.max_tokens = 0;
  EXPECT_NE(refused(bad).message().find("max_tokens: got 0"), std::string::npos);
  bad = ok;
  bad.max_tokens = 254;
  EXPECT_NE(refused(bad).message().find("exceed the model's context of 256"), std::string::npos);
  bad = ok;
  bad.temperature = -1;
  EXPECT_NE(refused(bad).message().find("temperature: got -1"), std::string::npos);
  // Every node gone: unavailable.
  cluster->KillNode(0);
  for (int i = 0; i < 500 && !cluster->weight_node().active_nodes().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  core::Status st = refused(ok);
  EXPECT_EQ(st.code(), core::StatusCode::kUnavailable) << st.ToString();
}

TEST(CompletionEngineTest, AFullQueueAndAPoolTooSmallAreRefusedAsOverloaded) {
  auto model = models::LlamaModel::FromSeed(EngineConfig(), 35, 0.1f);
  ASSERT_TRUE(model.ok());
  auto cluster = StartEngineCluster(*model, 1, 256);  // 256 tokens, tails moved every 8
  ASSERT_NE(cluster, nullptr);
  EngineOptions eo;
  eo.max_queued = 1;
  eo.max_active = 1;
  eo.max_nodes = 1;
  CompletionEngine engine(*model, *cluster, eo);
  CompletionParams huge;
  huge.prompt.assign(100, 7);
  huge.max_tokens = 130;  // 230 tokens + a page for each of its 30 ranges > 256 x 1 node
  core::Status st = engine.Submit(huge).status();
  EXPECT_EQ(st.code(), core::StatusCode::kInfeasible);
  EXPECT_NE(st.message().find("maximum of 1 attention nodes"), std::string::npos) << st.message();
  // One running (max_active 1), one queued, the next refused: the queue holds max_queued 1.
  // The running one is long (50 tokens) so that the other two arrive while it runs.
  CompletionParams one;
  one.prompt.assign(10, 3);
  one.max_tokens = 50;
  one.stop_at_eos = false;
  auto a = engine.Submit(one);
  ASSERT_TRUE(a.ok());
  auto e = (*a)->Next(60);  // a is running once its first token is out
  ASSERT_TRUE(e.has_value());
  CompletionParams small = one;
  small.prompt.assign(2, 3);
  small.max_tokens = 2;  // 4 tokens: fits beside a's 60, so it waits for the batch only
  auto b = engine.Submit(small);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto c = engine.Submit(small);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(c.status().message().find("queue full"), std::string::npos) << c.status().message();
  EXPECT_TRUE(Drain(**a).error.ok());
  EXPECT_TRUE(Drain(**b).error.ok());
  EXPECT_EQ(engine.Metrics().failed, 0);
}

}  // namespace
}  // namespace tessera::kernelflume
