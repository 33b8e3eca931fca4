#include "kernelflume/fleet_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "hw/cluster.h"
#include "kernelflume/decode_cost_model.h"
#include "models/llama_config.h"

namespace tessera::kernelflume {
namespace {

models::LlamaConfig Llama8b() { return *models::LoadLlamaConfig("llama-3.1-8b"); }
hw::Cluster H100() { return *hw::ClusterPreset("h100x64"); }

workload::TraceRequest Req(int64_t t_ms, int64_t in, int64_t out, int64_t first_id) {
  workload::TraceRequest r;
  r.timestamp_ms = t_ms;
  r.input_length = in;
  r.output_length = out;
  for (int64_t b = 0; b < workload::TraceBlocks(in); ++b) r.hash_ids.push_back(first_id + b);
  return r;
}

FleetSimOptions Fixed(int nodes) {
  FleetSimOptions o;
  o.autoscaler.min_nodes = nodes;
  o.autoscaler.max_nodes = nodes;
  o.max_weight_nodes = 1;
  return o;
}

// B requests arriving together on a fixed fleet decode as one batch: the simulated TPOT is the
// cost model's step at the batch's middle context (the KV grows by one token per request and
// step), and the price is the fleet's GPU time over the tokens.
TEST(FleetSimTest, OneBatchDecodesAtTheCostModelsStepTime) {
  const auto model = Llama8b();
  const auto cluster = H100();
  std::vector<workload::TraceRequest> trace;
  const int64_t b = 8, in = 4000, out = 401;
  for (int i = 0; i < b; ++i) trace.push_back(Req(0, in, out, 100 * i));
  for (FleetSystem system : {FleetSystem::kServerlessLlm, FleetSystem::kKernelFlume}) {
    SCOPED_TRACE(FleetSystemName(system));
    FleetSimOptions o = Fixed(1);
    o.pipelined = false;
    auto r = SimulateFleet(trace, model, cluster, system, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->completed, b);
    EXPECT_EQ(r->output_tokens, b * out);
    EXPECT_EQ(r->preemptions, 0);
    const FleetStep mid{b, static_cast<double>(b) * (in + out / 2), 1, 1};
    const double step_s = system == FleetSystem::kKernelFlume
                              ? KernelFlumeStepSeconds(model, cluster, cluster.device, mid, false)
                              : InstanceStepSeconds(model, cluster, mid);
    EXPECT_NEAR(r->tpot_p50_ms, step_s * 1e3, 0.01 * step_s * 1e3);
    // One prefill of all prompts, then out - 1 steps.
    const double prefill_s =
        b * (system == FleetSystem::kKernelFlume
                 ? KernelFlumePrefillSeconds(model, cluster, cluster.device, in, 0, 1, 1)
                 : PrefillSeconds(model, cluster, in, 0, 1));
    EXPECT_NEAR(r->end_s, prefill_s + (out - 1) * step_s, 0.01 * r->end_s);
    const int gpus = system == FleetSystem::kKernelFlume ? 2 : 1;
    EXPECT_EQ(r->gpus_max, gpus);
    const double usd = gpus * r->end_s * cluster.device.price_usd_per_hour / 3600;
    EXPECT_NEAR(r->cost_usd, usd, 1e-9 * usd);
    EXPECT_NEAR(r->usd_per_mtok, usd / (b * out / 1e6), 1e-6 * r->usd_per_mtok);
    EXPECT_NEAR(r->ttft_p50_s, prefill_s, 1e-9);
  }
}

// Instances whose KV fills preempt the newest request and recompute it; the attention pool of
// the same trace scales out instead and preempts nothing.
TEST(FleetSimTest, FullInstancesPreemptWhereTheAttentionPoolGrows) {
  const auto model = Llama8b();
  const auto cluster = H100();
  // An H100 instance of Llama-3.1-8B holds about 467K KV tokens beside its weights (four
  // prompts, not their outputs); an attention node about 590K (five prompts: scale out).
  std::vector<workload::TraceRequest> trace;
  for (int i = 0; i < 5; ++i) trace.push_back(Req(0, 110000, 10000, 1000 * i));
  auto sllm = SimulateFleet(trace, model, cluster, FleetSystem::kServerlessLlm, Fixed(1));
  ASSERT_TRUE(sllm.ok()) << sllm.status().ToString();
  EXPECT_EQ(sllm->completed, 5);
  EXPECT_GT(sllm->preemptions, 0);
  EXPECT_GT(sllm->recomputed_tokens, 100000);
  FleetSimOptions o;
  o.autoscaler.max_nodes = 4;
  auto kf = SimulateFleet(trace, model, cluster, FleetSystem::kKernelFlume, o);
  ASSERT_TRUE(kf.ok()) << kf.status().ToString();
  EXPECT_EQ(kf->completed, 5);
  EXPECT_EQ(kf->preemptions, 0);
  EXPECT_GE(kf->scale_outs, 1);
  EXPECT_GE(kf->gpus_max, 3);  // the weight GPU and at least two attention nodes
  // Recomputing costs prefill time: the instance's worst token waits longer.
  EXPECT_GT(sllm->tpot_p99_ms, kf->tpot_p99_ms);
}

// A session's second turn reuses the first turn's KV; on instances it goes back to the instance
// that holds it.
TEST(FleetSimTest, ASessionsNextTurnReusesItsCachedPrefix) {
  const auto model = Llama8b();
  const auto cluster = H100();
  std::vector<workload::TraceRequest> trace = {Req(0, 20480, 100, 0), Req(0, 10240, 100, 500)};
  workload::TraceRequest turn2 = Req(30000, 22000, 50, 0);  // starts with turn 1's 40 blocks
  for (int64_t b = 40; b < workload::TraceBlocks(22000); ++b) turn2.hash_ids[b] = 900 + b;
  trace.push_back(turn2);
  for (FleetSystem system : {FleetSystem::kServerlessLlm, FleetSystem::kKernelFlume}) {
    SCOPED_TRACE(FleetSystemName(system));
    auto r = SimulateFleet(trace, model, cluster, system, Fixed(2));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->completed, 3);
    EXPECT_EQ(r->cached_tokens, 20480);
    EXPECT_EQ(r->prefill_tokens, 20480 + 10240 + (22000 - 20480));
  }
}

// A turn that arrives while the previous turn of its session is still decoding (the trace
// assumed a faster system) waits for it, and then finds its KV cached.
TEST(FleetSimTest, ATurnWaitsForThePreviousTurnOfItsSession) {
  const auto model = Llama8b();
  const auto cluster = H100();
  workload::TraceRequest turn1 = Req(0, 20480, 2000, 0);
  workload::TraceRequest turn2 = Req(1000, 23000, 10, 0);  // 1 s later: turn 1 is not done
  for (int64_t b = 40; b < workload::TraceBlocks(23000); ++b) turn2.hash_ids[b] = 900 + b;
  workload::TraceRequest turn3 = Req(1500, 24000, 10, 0);  // starts with turn 2's 44 blocks
  for (int64_t b = 40; b < workload::TraceBlocks(24000); ++b) turn3.hash_ids[b] = 900 + b;
  const std::vector<workload::TraceRequest> trace = {turn1, turn2, turn3};
  for (FleetSystem system : {FleetSystem::kServerlessLlm, FleetSystem::kKernelFlume}) {
    SCOPED_TRACE(FleetSystemName(system));
    auto r = SimulateFleet(trace, model, cluster, system, Fixed(1));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->completed, 3);
    EXPECT_EQ(r->held_turns, 2);  // turn 3 waits for turn 2 (held itself), not for turn 1
    EXPECT_EQ(r->cached_tokens, 20480 + 44 * 512);
    // Turn 2 started after turn 1 ended: the run outlasts turn 1 alone by turn 2's prefill at
    // least; TTFT counts from the release, not from the trace's time (1 s after turn 1).
    auto alone = SimulateFleet({turn1}, model, cluster, system, Fixed(1));
    ASSERT_TRUE(alone.ok());
    EXPECT_GT(r->end_s, alone->end_s + 0.01);
    EXPECT_LT(r->ttft_p99_s, alone->end_s - 1.0);
  }
}

// A finished request's KV stays cached for cache_ttl_s: a turn after a longer pause recomputes.
TEST(FleetSimTest, CachedKvExpiresAfterItsTimeToLive) {
  workload::TraceRequest turn2 = Req(120000, 22000, 50, 0);  // 2 minutes later
  for (int64_t b = 40; b < workload::TraceBlocks(22000); ++b) turn2.hash_ids[b] = 900 + b;
  const std::vector<workload::TraceRequest> trace = {Req(0, 20480, 100, 0), turn2};
  FleetSimOptions o = Fixed(1);
  for (double ttl : {60.0, 600.0}) {
    o.cache_ttl_s = ttl;
    auto r = SimulateFleet(trace, Llama8b(), H100(), FleetSystem::kKernelFlume, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->cached_tokens, ttl > 120 ? 20480 : 0) << "ttl " << ttl;
  }
}

// With a TPOT target, a step slower than kv_high x the target adds attention nodes even when the
// KV fits, and the steps get faster.
TEST(FleetSimTest, ATpotTargetAddsAttentionNodesWhenStepsAreSlow) {
  std::vector<workload::TraceRequest> trace;
  for (int i = 0; i < 4; ++i) trace.push_back(Req(0, 100000, 3000, 1000 * i));
  FleetSimOptions o;
  o.max_weight_nodes = 1;
  auto plain = SimulateFleet(trace, Llama8b(), H100(), FleetSystem::kKernelFlume, o);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->scale_outs, 0);        // 400K tokens: 68% of one node
  o.tpot_target_ms = plain->tpot_p50_ms;  // the step is above 0.85 x the target
  auto targeted = SimulateFleet(trace, Llama8b(), H100(), FleetSystem::kKernelFlume, o);
  ASSERT_TRUE(targeted.ok()) << targeted.status().ToString();
  EXPECT_GE(targeted->scale_outs, 1);
  EXPECT_LT(targeted->tpot_p50_ms, plain->tpot_p50_ms);
}

// Chunked prefill spreads a long prompt over many steps beside the running batch: the same
// tokens are computed, and the running request never waits for the whole prompt at once.
TEST(FleetSimTest, ChunkedPrefillSpreadsALongPromptOverSteps) {
  const std::vector<workload::TraceRequest> trace = {Req(0, 1000, 3000, 0),
                                                     Req(1000, 60000, 10, 500)};
  double worst[2] = {0, 0};
  int64_t prefilled[2] = {0, 0};
  for (int chunked = 0; chunked < 2; ++chunked) {
    FleetSimOptions o = Fixed(1);
    o.window_s = 0.2;
    o.prefill_chunk_tokens = chunked ? 512 : 0;
    auto r = SimulateFleet(trace, Llama8b(), H100(), FleetSystem::kServerlessLlm, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->completed, 2);
    EXPECT_EQ(r->output_tokens, 3010);
    prefilled[chunked] = r->prefill_tokens;
    for (const FleetWindow& w : r->windows)
      worst[chunked] = std::max(worst[chunked], w.tpot_p99_ms);
  }
  EXPECT_EQ(prefilled[0], 61000);
  EXPECT_EQ(prefilled[1], 61000);
  // One stall of the whole 60K-token prefill against a step plus one 512-token chunk.
  EXPECT_GT(worst[0], 5 * worst[1]);
}

TEST(FleetSimTest, RejectsRequestsNoPlaceCanHoldAndCountsThem) {
  std::vector<workload::TraceRequest> trace = {Req(0, 2000, 10, 0), Req(10, 500000, 10, 100)};
  auto r = SimulateFleet(trace, Llama8b(), H100(), FleetSystem::kServerlessLlm, Fixed(1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->completed, 1);
  EXPECT_EQ(r->rejected, 1);
  // The attention pool of up to 63 H100s holds it.
  auto kf = SimulateFleet(trace, Llama8b(), H100(), FleetSystem::kKernelFlume, FleetSimOptions{});
  ASSERT_TRUE(kf.ok()) << kf.status().ToString();
  EXPECT_EQ(kf->completed, 2);
  EXPECT_EQ(kf->rejected, 0);
}

TEST(FleetSimTest, SameInputsSameResult) {
  std::vector<workload::TraceRequest> trace;
  for (int i = 0; i < 40; ++i)
    trace.push_back(Req(i * 700, 30000 + 997 * i, 200 + 13 * i, 100 * i));
  for (FleetSystem system : {FleetSystem::kServerlessLlm, FleetSystem::kKernelFlume}) {
    auto a = SimulateFleet(trace, Llama8b(), H100(), system, FleetSimOptions{});
    auto b = SimulateFleet(trace, Llama8b(), H100(), system, FleetSimOptions{});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(ToJson(*a).dump(), ToJson(*b).dump());
    EXPECT_EQ(a->completed, 40);
  }
}

TEST(FleetSimTest, BadInputIsRefusedWithTheField) {
  std::vector<workload::TraceRequest> trace = {Req(0, 1000, 10, 0)};
  auto big = models::LoadLlamaConfig("llama-3.1-70b");
  ASSERT_TRUE(big.ok());
  auto r = SimulateFleet(trace, *big, H100(), FleetSystem::kServerlessLlm, FleetSimOptions{});
  EXPECT_EQ(r.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("raise weight_gpus"), std::string::npos);
  FleetSimOptions o;
  o.weight_gpus = 4;  // fits on 4 GPUs
  EXPECT_TRUE(SimulateFleet(trace, *big, H100(), FleetSystem::kServerlessLlm, o).ok());
  o.max_batch = 0;
  EXPECT_NE(SimulateFleet(trace, *big, H100(), FleetSystem::kKernelFlume, o)
                .status()
                .message()
                .find("max_batch"),
            std::string::npos);
  FleetSimOptions too_many;
  too_many.weight_nodes = 64;
  EXPECT_EQ(
      SimulateFleet(trace, Llama8b(), H100(), FleetSystem::kKernelFlume, too_many).status().code(),
      core::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(SimulateFleet({}, Llama8b(), H100(), FleetSystem::kKernelFlume, {}).ok());
}

}  // namespace
}  // namespace tessera::kernelflume
