#include "kernelflume/trace_replay.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernelflume/completion_engine.h"
#include "kernelflume/scale_bench.h"
#include "models/llama.h"

namespace tessera::kernelflume {
namespace {

workload::TraceRequest Mooncake(int64_t t_ms, int64_t in, int64_t out) {
  workload::TraceRequest r;
  r.timestamp_ms = t_ms;
  r.input_length = in;
  r.output_length = out;
  for (int64_t b = 0; b < workload::TraceBlocks(in); ++b) r.hash_ids.push_back(b);
  return r;
}

models::LlamaConfig Context(int64_t max_context) {
  models::LlamaConfig c = *models::LlamaPreset("tiny-gqa");
  c.max_context = max_context;
  return c;
}

TEST(TraceReplayTest, ScalesSelectsAndClampsRequests) {
  const std::vector<workload::TraceRequest> trace = {Mooncake(0, 1000, 100), Mooncake(2000, 40, 3),
                                                     Mooncake(5000, 30000, 500),
                                                     Mooncake(9000, 2000, 200)};
  ReplayScaling s;
  s.token_scale = 0.01;
  s.output_scale = 0.1;
  s.time_scale = 0.5;
  s.start_s = 2;
  s.max_requests = 2;
  auto r = ScaleTraceForReplay(trace, s, Context(256));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->requests.size(), 2u);  // from 2 s, at most two
  EXPECT_DOUBLE_EQ(r->requests[0].arrival_s, 0);
  EXPECT_EQ(r->requests[0].prompt.size(), 1u);      // round(0.4) -> at least 1
  EXPECT_EQ(r->requests[0].max_tokens, 1);          // round(0.3) -> at least 1
  EXPECT_DOUBLE_EQ(r->requests[1].arrival_s, 1.5);  // (5 - 2) s x 0.5
  // 300 + 50 tokens do not fit a 256-token context: output to 50, prompt to 206.
  EXPECT_EQ(r->requests[1].max_tokens, 50);
  EXPECT_EQ(r->requests[1].prompt.size(), 206u);
  EXPECT_EQ(r->clamped, 1);
  for (int32_t t : r->requests[1].prompt) EXPECT_TRUE(t >= 0 && t < 256);
  // Same seed, same prompts.
  auto again = ScaleTraceForReplay(trace, s, Context(256));
  EXPECT_EQ(again->requests[1].prompt, r->requests[1].prompt);
  s.token_scale = 0;
  EXPECT_NE(ScaleTraceForReplay(trace, s, Context(256)).status().message().find("token_scale"),
            std::string::npos);
  s.token_scale = 0.01;
  s.start_s = 100;
  EXPECT_FALSE(ScaleTraceForReplay(trace, s, Context(256)).ok());
}

TEST(TraceReplayTest, SimRequestsReserveWhatTheEngineReserves) {
  TraceRequest r;
  r.arrival_s = 1.5;
  r.prompt.assign(100, 7);
  r.max_tokens = 28;
  const std::vector<EngineSimRequest> s = EngineSimRequestsOf({r}, 16, 64);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].prompt_tokens, 100);
  EXPECT_EQ(s[0].max_tokens, 28);
  EXPECT_EQ(s[0].reserve_tokens, ReserveTokens(128, 16, 64));
  EXPECT_EQ(ReserveTokens(128, 16, 64), 128 + (2 + 1) * 16);
}

TEST(TraceReplayTest, ComparesPercentilesOfTheGaps) {
  // Real gaps 10, 10, 20 ms; predicted 11, 11, 22: 10% off at every percentile.
  const std::vector<std::vector<double>> real = {{0, 0.010, 0.020}, {1, 1.020}};
  const std::vector<std::vector<double>> predicted = {{0, 0.011, 0.022}, {1, 1.022}};
  const ReplayComparison c = CompareReplay(real, predicted);
  EXPECT_EQ(c.real_samples, 3);
  EXPECT_NEAR(c.real_p50_ms, 10, 1e-9);
  EXPECT_NEAR(c.predicted_p50_ms, 11, 1e-9);
  EXPECT_NEAR(c.p50_error, 0.1, 1e-9);
  EXPECT_NEAR(c.p99_error, 0.1, 1e-9);
}

// A replay on in-process nodes: every request's tokens arrive, the engine's iterations are
// recorded with their batch and prefill, and the simulator's schedule gives each request as many
// tokens as the real engine did.
TEST(TraceReplayTest, ReplayRecordsIterationsTheSimulatorCanFollow) {
  auto model = models::LlamaModel::Open("tiny-gqa", 1);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const std::vector<workload::TraceRequest> trace = {
      Mooncake(0, 3000, 800), Mooncake(50, 6000, 400), Mooncake(100, 1500, 600)};
  ReplayScaling s;
  s.token_scale = 0.01;
  s.output_scale = 0.02;
  auto scaled = ScaleTraceForReplay(trace, s, model->config());
  ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
  ScaleBenchOptions o;
  o.requests = scaled->requests;
  o.min_nodes = o.max_nodes = 2;
  o.record_iterations = true;
  o.settle_s = 0;
  o.capacity_tokens = 4096;
  auto run = RunScaleBench(*model, o, ScaleSystem::kKernelFlume);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_TRUE(ScaleVerdict(*run).ok()) << ScaleVerdict(*run).ToString();
  ASSERT_EQ(run->token_s.size(), 3u);
  int64_t prefilled = 0, decoded = 0;
  for (const EngineIteration& it : run->iterations) {
    prefilled += it.prefill_tokens;
    decoded += it.decode_batch;
    EXPECT_GT(it.duration_s, 0);
  }
  EXPECT_EQ(prefilled, 30 + 60 + 15);  // every prompt token, once
  // Each token but the last of each request comes from one forward.
  EXPECT_EQ(decoded, (16 - 1) + (8 - 1) + (12 - 1));
  EngineProfile noiseless;
  noiseless.base_s = 1e-3;
  EngineSimOptions so;
  so.max_active = o.max_active;
  so.prefill_tokens_per_step = o.prefill_tokens_per_step;
  so.capacity_tokens = o.capacity_tokens * 2;
  auto sim = SimulateEngine(EngineSimRequestsOf(o.requests, 64, 16384), so, noiseless);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(sim->token_s[i].size(), run->token_s[i].size()) << "request " << i;
  }
}

}  // namespace
}  // namespace tessera::kernelflume
