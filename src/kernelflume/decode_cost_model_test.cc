#include "kernelflume/decode_cost_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "hw/cluster.h"
#include "models/generate.h"

namespace tessera::kernelflume {
namespace {

// A hand-made cluster without an SM count, so every GEMM is max(FLOPs / achieved, bytes / bw)
// and the reference below can be written from the formula alone.
hw::Cluster HandCluster() {
  hw::Cluster c;
  c.name = "hand";
  c.device.name = "hand-gpu";
  c.device.peak_flops.bf16 = 400e12;
  c.device.compute_efficiency = 0.5;  // 200 TFLOP/s achieved
  c.device.mem_bw_bytes_per_s = 2e12;
  c.device.memory_bytes = 80e9;
  c.device.memory_usable_fraction = 0.9;
  c.nodes = 4;
  c.ranks_per_node = 8;
  c.intra = {"nvl", 400e9, 5e-6};
  c.inter = {"ib", 50e9, 10e-6};
  return c;
}

double RefGemm(double m, double n, double k) {
  return std::max(2 * m * n * k / 200e12, 2 * (m * k + k * n + m * n) / 2e12);
}

// t_w of one layer at W = 1, from the seven linears' shapes.
double RefWeightLayer(const models::LlamaConfig& m, double b) {
  const double q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim;
  return RefGemm(b, q, m.hidden) + 2 * RefGemm(b, kv, m.hidden) +
         2 * RefGemm(b, m.ffn_hidden, m.hidden) + RefGemm(b, m.hidden, q) +
         RefGemm(b, m.hidden, m.ffn_hidden);
}

models::LlamaConfig Llama8b() {
  auto m = models::LlamaPreset("llama-3.1-8b");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

DecodeShape Shape(int64_t batch, int64_t context, int attn_nodes = 1, int weight_gpus = 1) {
  DecodeShape s;
  s.batch = batch;
  s.context_tokens = context;
  s.attn_nodes = attn_nodes;
  s.weight_gpus = weight_gpus;
  return s;
}

TEST(DecodeCostModelTest, OneNodeStepIsTheSumOfItsTerms) {
  const models::LlamaConfig m = Llama8b();
  const hw::Cluster c = HandCluster();
  DecodeShape s = Shape(4, 10000);
  auto r = ModelDecodeStep(m, c, s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->weight_s, RefWeightLayer(m, 4), 1e-15);
  EXPECT_EQ(r->allreduce_s, 0);
  // KV read: 4 x 10,000 tokens x (K and V) x 8 KV heads x 128 x 2 bytes, over 2 TB/s.
  EXPECT_NEAR(r->attention_s, 4.0 * 10000 * 2 * 8 * 128 * 2 / 2e12, 1e-15);
  // One message of 4 queries: 32 heads x 128 x 2 bytes for q and o each, plus 32 LSEs.
  EXPECT_NEAR(r->comm_s, 10e-6 + 4.0 * (32 * 128 * 2 * 2 + 32 * 4) / 50e9, 1e-15);
  EXPECT_NEAR(r->lm_head_s, RefGemm(4, m.vocab, m.hidden), 1e-15);
  EXPECT_NEAR(r->kernelflume_s, 32 * (r->weight_s + r->attention_s + r->comm_s) + r->lm_head_s,
              1e-12);
  // The instance reads the same KV on its own GPU and sends nothing.
  EXPECT_NEAR(r->instance_attention_s, r->attention_s, 1e-15);
  EXPECT_NEAR(r->instance_s, 32 * (r->weight_s + r->attention_s) + r->lm_head_s, 1e-12);
  EXPECT_NEAR(r->kv_bytes_per_token, 2.0 * 32 * 8 * 128 * 2, 0);
  EXPECT_NEAR(r->weight_bytes_per_gpu, 2.0 * m.ParamCount(), 0);
}

TEST(DecodeCostModelTest, MoreNodesSplitTheAttentionNotTheMessages) {
  const models::LlamaConfig m = Llama8b();
  const hw::Cluster c = HandCluster();
  DecodeShape s = Shape(16, 32768);
  auto one = ModelDecodeStep(m, c, s);
  s.attn_nodes = 4;
  auto four = ModelDecodeStep(m, c, s);
  ASSERT_TRUE(one.ok() && four.ok());
  EXPECT_NEAR(four->attention_s, one->attention_s / 4, 1e-15);
  EXPECT_EQ(four->comm_s, one->comm_s);
  EXPECT_LT(four->kernelflume_s, one->kernelflume_s);
  EXPECT_EQ(four->weight_s, one->weight_s);
}

// Ping-pong pays where the weight GEMMs are compute-bound (a large batch): each half then costs
// about half. At a small batch they are bandwidth-bound, each half re-reads every weight, and
// two micro-batches are slower than one.
TEST(DecodeCostModelTest, PingPongPaysOnlyWhenTheGemmsAreComputeBound) {
  const models::LlamaConfig m = Llama8b();
  const hw::Cluster c = HandCluster();
  DecodeShape s = Shape(512, 1024);
  auto r = ModelDecodeStep(m, c, s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const double serial = r->kernelflume_s - r->lm_head_s;
  const double piped = r->kernelflume_pipelined_s - r->lm_head_s;
  EXPECT_LT(piped, serial);
  // Never better than the busier side alone over every layer.
  EXPECT_GE(piped, 32 * std::max(r->weight_s, r->attention_s + r->comm_s) * 0.99);
  s.batch = 32;
  auto small = ModelDecodeStep(m, c, s);
  ASSERT_TRUE(small.ok());
  EXPECT_GT(small->kernelflume_pipelined_s, small->kernelflume_s);
  s.batch = 1;  // nothing to split
  auto one = ModelDecodeStep(m, c, s);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->kernelflume_pipelined_s, one->kernelflume_s);
}

TEST(DecodeCostModelTest, TensorParallelWeightsPayTwoAllReducesPerLayer) {
  const models::LlamaConfig m = Llama8b();
  const hw::Cluster c = HandCluster();
  DecodeShape s = Shape(8, 1000, 1, 4);
  auto r = ModelDecodeStep(m, c, s);
  ASSERT_TRUE(r.ok());
  const double bytes = 8.0 * 4096 * 2;
  EXPECT_NEAR(r->allreduce_s, 2 * (6 * 5e-6 + 6.0 / 4 * bytes / 400e9), 1e-15);
  EXPECT_NEAR(r->weight_bytes_per_gpu, 2.0 * m.ParamCount() / 4, 1e-3);
}

TEST(DecodeCostModelTest, MemoryDecidesWhatFits) {
  const hw::Cluster c = HandCluster();
  DecodeShape s = Shape(32, 32768, 4);
  auto r = ModelDecodeStep(Llama8b(), c, s);
  ASSERT_TRUE(r.ok());
  // 72 GB usable over 128 KiB per token; the instance keeps what the 16 GB of weights leave.
  EXPECT_EQ(r->kv_tokens_per_attn_node, std::floor(72e9 / 131072));
  EXPECT_EQ(r->kv_tokens_per_instance, std::floor((72e9 - 2.0 * Llama8b().ParamCount()) / 131072));
  EXPECT_EQ(r->kv_tokens_needed, 32.0 * 32768);
  EXPECT_FALSE(r->instance_fits);
  s.batch = 2;
  auto small = ModelDecodeStep(Llama8b(), c, s);
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(small->instance_fits);

  s.attn_nodes = 1;
  s.batch = 64;  // 2.1M tokens on one 72 GB node
  auto full = ModelDecodeStep(Llama8b(), c, s);
  EXPECT_EQ(full.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(full.status().message().find("raise attn_nodes"), std::string::npos);

  auto big = models::LlamaPreset("llama-3.1-70b");
  ASSERT_TRUE(big.ok());
  s.batch = 1;
  auto no = ModelDecodeStep(*big, c, s);
  EXPECT_EQ(no.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(no.status().message().find("raise weight_gpus"), std::string::npos);
  s.weight_gpus = 2;
  EXPECT_TRUE(ModelDecodeStep(*big, c, s).ok());
}

// The same batch on whole instances: as many as its KV needs, the requests split among them;
// the steady-state price of both from the device's price per GPU-hour.
TEST(DecodeCostModelTest, AFleetOfInstancesHoldsTheKvAndBothArePriced) {
  hw::Cluster c = HandCluster();
  c.device.price_usd_per_hour = 3.6;  // 0.001 $ per GPU-second
  const models::LlamaConfig m = Llama8b();
  DecodeShape s = Shape(32, 32768, 2);
  auto r = ModelDecodeStep(m, c, s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->instances_feasible);
  const double per_instance = std::floor((72e9 - 2.0 * m.ParamCount()) / 131072);
  EXPECT_EQ(r->instances, static_cast<int64_t>(std::ceil(32.0 * 32768 / per_instance)));
  EXPECT_EQ(r->instance_batch, (32 + r->instances - 1) / r->instances);
  // One instance's step at its share of the batch: weights + its requests' KV read + LM head.
  const double bi = static_cast<double>(r->instance_batch);
  EXPECT_NEAR(r->instance_fleet_s,
              32 * (RefWeightLayer(m, bi) + bi * 32768 * 2 * 8 * 128 * 2 / 2e12) +
                  RefGemm(bi, m.vocab, m.hidden),
              1e-12);
  EXPECT_NEAR(r->kernelflume_usd_per_mtok, 3 * 0.001 * r->kernelflume_s / 32 * 1e6, 1e-9);
  EXPECT_NEAR(r->instances_usd_per_mtok,
              static_cast<double>(r->instances) * 0.001 * r->instance_fleet_s / 32 * 1e6, 1e-9);
  // A request longer than an instance can hold: no fleet of instances serves it.
  s.batch = 1;
  s.context_tokens = 500000;
  auto longer = ModelDecodeStep(m, c, s);
  ASSERT_TRUE(longer.ok()) << longer.status().ToString();
  EXPECT_FALSE(longer->instances_feasible);
  EXPECT_EQ(longer->instances, 0);
  EXPECT_GT(longer->kernelflume_usd_per_mtok, 0);
}

TEST(DecodeCostModelTest, RefusesEachBadShapeByName) {
  const hw::Cluster c = HandCluster();
  const models::LlamaConfig m = Llama8b();
  auto refused = [&](DecodeShape s, const std::string& field) {
    auto r = ModelDecodeStep(m, c, s);
    EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().ToString();
  };
  DecodeShape s;
  s.batch = 0;
  refused(s, "batch");
  s = {};
  s.context_tokens = -1;
  refused(s, "context_tokens");
  s = {};
  s.attn_nodes = 0;
  refused(s, "attn_nodes");
  s = {};
  s.weight_gpus = 9;
  refused(s, "weight_gpus");
}

// KernelFlume's chunked prefill against a plain loop over the chunks, and the whole-instance
// prefill against its formula, on seeded token counts.
TEST(DecodeCostModelTest, ChunkedPrefillMatchesALoopOverItsChunks) {
  const models::LlamaConfig m = Llama8b();
  const hw::Cluster c = HandCluster();
  const double hd = static_cast<double>(m.num_heads * m.head_dim);
  const double kv_layer_token = static_cast<double>(m.KvBytesPerToken(2)) / m.num_layers;
  const double qol = hd * 2 * 2 + m.num_heads * 4.0;  // q + o (bf16) + lse (fp32) per token
  uint64_t x = 12345;
  for (int round = 0; round < 30; ++round) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const int64_t fresh = 1 + static_cast<int64_t>((x >> 33) % 5000);
    const int64_t cached = round % 3 == 0 ? 0 : static_cast<int64_t>((x >> 13) % 200000);
    const int nodes = 1 + round % 4;
    double self = 0, hist = 0, read = 0, chunks = 0;
    for (int64_t start = 0; start < fresh; start += models::kPrefillChunkTokens) {
      const double len = static_cast<double>(std::min(models::kPrefillChunkTokens, fresh - start));
      const double before = static_cast<double>(cached + start);
      self += 4 * hd * len * (len + 1) / 2;
      hist += 4 * hd * len * before;
      read += before;
      chunks += 1;
    }
    const double hist_s =
        hist == 0 ? 0
                  : std::max(hist / nodes / 200e12, read * kv_layer_token / nodes / 2e12) +
                        chunks * 10e-6 + fresh * qol / 50e9;
    const double want =
        m.num_layers * (RefWeightLayer(m, static_cast<double>(fresh)) + self / 200e12 + hist_s) +
        RefGemm(1, m.vocab, m.hidden);
    const double got = KernelFlumePrefillSeconds(m, c, c.device, fresh, cached, nodes, 1);
    EXPECT_NEAR(got, want, 1e-9 * want) << "new " << fresh << " cached " << cached;
    // A whole instance attends the history itself (FLOPs or the KV read, whichever is slower).
    const double pairs = fresh * (cached + (fresh + 1) / 2.0);
    const double inst =
        m.num_layers * (RefWeightLayer(m, static_cast<double>(fresh)) +
                        std::max(4 * hd * pairs / 200e12, cached * kv_layer_token / 2e12)) +
        RefGemm(1, m.vocab, m.hidden);
    EXPECT_NEAR(PrefillSeconds(m, c, fresh, cached, 1), inst, 1e-9 * inst);
  }
  EXPECT_EQ(KernelFlumePrefillSeconds(m, c, c.device, 0, 1000, 1, 1), 0);
  EXPECT_EQ(PrefillSeconds(m, c, 0, 1000, 1), 0);
}

TEST(DecodeCostModelTest, PresetClustersGiveFiniteSteps) {
  for (const std::string& name : {std::string("h100x64"), std::string("a6000x32")}) {
    auto c = hw::ClusterPreset(name);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto r = ModelDecodeStep(Llama8b(), *c, Shape(16, 16384, 2));
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    EXPECT_GT(r->kernelflume_s, 0) << name;
    EXPECT_TRUE(std::isfinite(r->instance_s)) << name;
  }
}

}  // namespace
}  // namespace tessera::kernelflume
