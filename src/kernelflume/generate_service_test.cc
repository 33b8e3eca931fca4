// The disaggregated Llama decode against the same model in one process: teacher-forced logits
// within 1e-5 relative at every step and equal greedy tokens, for 1-7 attention nodes, MHA and
// GQA, tails re-routed every 1, 7 and 64 tokens; and the errors a user sees.
#include "kernelflume/generate_service.h"

#include <gtest/gtest.h>

#include "core/rng.h"
#include "models/byte_tokenizer.h"
#include "models/llama_test_util.h"

namespace tessera::kernelflume {
namespace {

models::LlamaConfig SmallConfig(int64_t kv_heads) {
  models::LlamaConfig c = models::testing::SmallLlamaConfig(kv_heads, "test-small");
  c.max_context = 256;
  return c;
}

std::vector<std::vector<int32_t>> RandomPrompts(uint64_t seed, int count, int64_t vocab) {
  core::Rng rng(seed);
  std::vector<std::vector<int32_t>> out(count);
  for (auto& p : out) {
    p.resize(3 + rng.Below(20));
    for (int32_t& t : p) t = static_cast<int32_t>(rng.Below(vocab));
  }
  return out;
}

TEST(GenerateServiceTest, TeacherForcedLogitsMatchTheMonolithicModel) {
  for (int64_t kv_heads : {4, 2}) {
    auto model = models::LlamaModel::FromSeed(SmallConfig(kv_heads), 7, 0.1f);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    for (int nodes : {1, 3, 7}) {
      for (int64_t k : {1, 7, 64}) {
        AttentionClusterOptions o;
        o.num_nodes = nodes;
        o.page_tokens = 8;
        o.capacity_tokens = 4096;
        o.weight_node.router.reroute_every = k;
        auto cluster =
            AttentionCluster::Start(AttentionShapeOf(model->config()), model->Fingerprint(), o);
        ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
        GenerateOptions g;
        g.max_tokens = 24;
        g.check = true;
        g.sampling.stop_at_eos = false;
        auto report = RunGenerate(*model, **cluster, RandomPrompts(nodes * 100 + k, 2, 259), g);
        ASSERT_TRUE(report.ok()) << report.status().ToString();
        EXPECT_LE(report->max_rel_err, 1e-5)
            << "kv_heads " << kv_heads << " nodes " << nodes << " k " << k;
        EXPECT_EQ(report->mismatched_prompts, 0);
        EXPECT_EQ(report->generated_tokens, 48);
        if (k == 1 && nodes > 1) {
          EXPECT_GE(report->reroutes, 40);
        }
        // Every request's ranges were freed.
        EXPECT_EQ((*cluster)->weight_node().routes()->num_requests(), 0u);
      }
    }
  }
}

TEST(GenerateServiceTest, SeededTemperatureSamplingIsReproducible) {
  auto model = models::LlamaModel::FromSeed(SmallConfig(2), 3, 0.1f);
  ASSERT_TRUE(model.ok());
  std::vector<std::vector<int32_t>> tokens;
  for (int run = 0; run < 2; ++run) {
    AttentionClusterOptions o;
    o.num_nodes = 2;
    o.weight_node.router.reroute_every = 5;
    auto cluster =
        AttentionCluster::Start(AttentionShapeOf(model->config()), model->Fingerprint(), o);
    ASSERT_TRUE(cluster.ok());
    GenerateOptions g;
    g.max_tokens = 16;
    g.sampling.temperature = 0.8;
    g.sampling.seed = 42;
    g.sampling.stop_at_eos = false;
    auto report = RunGenerate(*model, **cluster, {{256, 72, 105}}, g);
    ASSERT_TRUE(report.ok());
    tokens.push_back(report->prompts[0].tokens);
  }
  EXPECT_EQ(tokens[0], tokens[1]);
}

TEST(GenerateServiceTest, BadRequestsNameTheFieldAndValue) {
  auto model = models::LlamaModel::FromSeed(SmallConfig(2), 3, 0.1f);
  ASSERT_TRUE(model.ok());
  AttentionClusterOptions o;
  auto cluster =
      AttentionCluster::Start(AttentionShapeOf(model->config()), model->Fingerprint(), o);
  ASSERT_TRUE(cluster.ok());
  GenerateOptions g;
  g.max_tokens = 0;
  EXPECT_NE(RunGenerate(*model, **cluster, {{1, 2}}, g)
                .status()
                .message()
                .find("max_tokens: got 0, must be >= 1"),
            std::string::npos);
  g.max_tokens = 10;
  EXPECT_NE(RunGenerate(*model, **cluster, {{1, 999}}, g)
                .status()
                .message()
                .find("token 999 at position 1"),
            std::string::npos);
  EXPECT_NE(RunGenerate(*model, **cluster, {std::vector<int32_t>(250, 1)}, g)
                .status()
                .message()
                .find("250 tokens + max_tokens 10 = 260 exceed the model's context of 256"),
            std::string::npos);
  EXPECT_NE(RunGenerate(*model, **cluster, {{}}, g).status().message().find("prompt 0: empty"),
            std::string::npos);
  // Bad cluster options.
  AttentionClusterOptions bad;
  bad.num_nodes = 0;
  EXPECT_NE(AttentionCluster::Start(AttentionShapeOf(model->config()), "x", bad)
                .status()
                .message()
                .find("attn_nodes: got 0"),
            std::string::npos);
  bad.num_nodes = 1;
  bad.capacity_tokens = 0;
  EXPECT_NE(AttentionCluster::Start(AttentionShapeOf(model->config()), "x", bad)
                .status()
                .message()
                .find("capacity_tokens: got 0"),
            std::string::npos);
}

TEST(GenerateServiceTest, AKilledNodeIsRecoveredFromAndTheLastOneFailsTheRunNamingIt) {
  auto model = models::LlamaModel::FromSeed(SmallConfig(2), 3, 0.1f);
  ASSERT_TRUE(model.ok());
  AttentionClusterOptions o;
  o.num_nodes = 2;
  o.weight_node.router.reroute_every = 4;
  auto cluster =
      AttentionCluster::Start(AttentionShapeOf(model->config()), model->Fingerprint(), o);
  ASSERT_TRUE(cluster.ok());
  (*cluster)->KillNode(0);
  GenerateOptions g;
  g.max_tokens = 20;
  g.check = true;
  auto report = RunGenerate(*model, **cluster, {{256, 1, 2, 3, 4, 5}}, g);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(CheckVerdict(*report, g).ok());
  (*cluster)->KillNode(1);
  report = RunGenerate(*model, **cluster, {{256, 1, 2, 3, 4, 5}}, g);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("no active attention node"), std::string::npos)
      << report.status().message();
}

TEST(GenerateServiceTest, CheckVerdictHoldsTheBarAndCountsGreedyMismatches) {
  GenerateReport r;
  r.prompts.resize(4);
  GenerateOptions g;
  r.max_rel_err = 1.0;
  EXPECT_TRUE(CheckVerdict(r, g).ok()) << "no --check: no verdict";
  g.check = true;
  r.max_rel_err = kCheckRelErrBar;
  EXPECT_TRUE(CheckVerdict(r, g).ok());
  r.max_rel_err = 2 * kCheckRelErrBar;
  core::Status s = CheckVerdict(r, g);
  EXPECT_EQ(s.code(), core::StatusCode::kInternal);
  EXPECT_NE(s.message().find("2.00e-05"), std::string::npos) << s.message();
  r.max_rel_err = 0;
  r.mismatched_prompts = 1;
  s = CheckVerdict(r, g);
  EXPECT_NE(s.message().find("1 of 4 prompts"), std::string::npos) << s.message();
  g.sampling.temperature = 0.8;  // sampled tokens are not compared with the monolithic argmax
  EXPECT_TRUE(CheckVerdict(r, g).ok());
}

TEST(GenerateServiceTest, PromptLinesAreByteTokenizedOnePerLine) {
  auto p = EncodePromptLines("ab\r\n\n\nc\n", "--prompts f.txt");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[0], models::ByteTokenizer::Encode("ab"));
  EXPECT_EQ((*p)[1], models::ByteTokenizer::Encode("c"));
  auto none = EncodePromptLines("\n\n", "--prompts f.txt");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--prompts f.txt"), std::string::npos);
}

}  // namespace
}  // namespace tessera::kernelflume
