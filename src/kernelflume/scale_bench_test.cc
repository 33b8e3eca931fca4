// KernelFlume's scaling benchmark pieces: per-window TPOT arithmetic on hand-made clocks, the
// seeded burst trace, the whole-instance baseline pool stepped tick by tick, and a short run of
// each system whose every request equals the monolithic model.
#include "kernelflume/scale_bench.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <thread>

#include "kernelflume/burst_trace.h"
#include "kernelflume/instance_pool.h"
#include "kernelflume/kernelflume_test_util.h"
#include "kernelflume/tpot_windows.h"
#include "models/llama_test_util.h"

namespace tessera::kernelflume {
namespace {

TEST(TpotWindowsTest, GapsGoToTheLaterTokensWindowAndFlatnessIsMaxOverMinP99) {
  // Request 0: tokens every 0.1 s from 0 to 2.0 s (gaps of 100 ms in windows 0 and 1).
  // Request 1: tokens at 1.0, 1.3, 1.6 (gaps of 300 ms, window 1).
  std::vector<double> r0;
  for (int i = 0; i <= 20; ++i) r0.push_back(0.1 * i);
  const std::vector<std::vector<double>> times{r0, {1.0, 1.3, 1.6}};
  auto rep = TpotByWindow(times, 1.0, 5);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  // Gap i of request 0 ends at 0.1 (i + 1): window 0 holds the 9 gaps ending before 1.0 (the
  // tenth ends at 1.0, which may round either side of the boundary in binary).
  ASSERT_EQ(rep->windows.size(), 3u);
  const int64_t total = rep->windows[0].samples + rep->windows[1].samples + rep->windows[2].samples;
  EXPECT_EQ(total, 20 + 2);
  EXPECT_NEAR(rep->windows[0].p99_ms, 100, 1e-6);
  EXPECT_NEAR(rep->windows[1].max_ms, 300, 1e-6);
  EXPECT_GT(rep->windows[1].p99_ms, 200);
  EXPECT_EQ(rep->lowest, 0);
  EXPECT_EQ(rep->highest, 1);
  EXPECT_NEAR(rep->flatness, rep->windows[1].p99_ms / rep->windows[0].p99_ms, 1e-12);
  // A window under min_samples does not count.
  EXPECT_FALSE(rep->windows[2].counted);
  auto one = TpotByWindow({{0, 0.5, 1.0}}, 10, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->flatness, 0.0);  // one counted window: nothing to compare
  EXPECT_FALSE(TpotByWindow(times, 0, 1).ok());
  EXPECT_NE(TpotByWindow(times, 1, 0).status().message().find("min_samples"), std::string::npos);
}

TEST(BurstTraceTest, SeededArrivalsCrowdIntoTheBurst) {
  models::LlamaConfig c = models::testing::SmallLlamaConfig(2, "trace");
  c.max_context = 4096;
  BurstTraceOptions o;
  o.duration_s = 400;
  o.base_rate_per_s = 0.5;
  o.burst_rate_per_s = 4;
  o.burst_start_s = 100;
  o.burst_end_s = 200;
  auto a = MakeBurstTrace(o, c);
  auto b = MakeBurstTrace(o, c);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->size(), b->size());
  int in_burst = 0;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].arrival_s, (*b)[i].arrival_s);
    EXPECT_EQ((*a)[i].prompt, (*b)[i].prompt);
    const TraceRequest& r = (*a)[i];
    if (i > 0) {
      EXPECT_GE(r.arrival_s, (*a)[i - 1].arrival_s);
    }
    EXPECT_GE(static_cast<int64_t>(r.prompt.size()), o.prompt_tokens_min);
    EXPECT_LE(static_cast<int64_t>(r.prompt.size()), o.prompt_tokens_max);
    EXPECT_GE(r.max_tokens, o.output_tokens_min);
    EXPECT_LE(r.max_tokens, o.output_tokens_max);
    in_burst += r.arrival_s >= 100 && r.arrival_s < 200 ? 1 : 0;
  }
  // Expected 400 in the burst and 150 outside it (Poisson: sd 20 and 12).
  EXPECT_GT(in_burst, 300);
  EXPECT_LT(in_burst, 500);
  EXPECT_GT(static_cast<int>(a->size()) - in_burst, 90);
  EXPECT_LT(static_cast<int>(a->size()) - in_burst, 210);
  o.burst_end_s = 500;
  EXPECT_NE(MakeBurstTrace(o, c).status().message().find("burst_end_s 500"), std::string::npos);
  o = BurstTraceOptions{};
  o.prompt_tokens_max = 4000;
  EXPECT_NE(MakeBurstTrace(o, c).status().message().find("context"), std::string::npos);
}

// A model saved to a scratch folder, for instances to load.
struct SavedModel {
  SavedModel() {
    models::LlamaConfig c = models::testing::SmallLlamaConfig(2, "test-scale");
    c.max_context = 256;
    auto m = models::LlamaModel::FromSeed(c, 41, 0.1f);
    EXPECT_TRUE(m.ok());
    model = std::make_unique<models::LlamaModel>(std::move(*m));
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tessera_scale_XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) dir = pattern;
    EXPECT_TRUE(model->Save(dir, models::TensorDtype::kF32).ok());
  }
  ~SavedModel() {
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
  std::unique_ptr<models::LlamaModel> model;
  std::string dir;
};

std::vector<int32_t> Prompt(int n, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back((i * 37 + salt * 11) % 256);
  return p;
}

// One instance holds one request; a second request's reservation alone is over kv_high of one
// instance, so a tick starts a second instance and the request runs there; after both end,
// ticks drain and retire it (keep-alive 0).
TEST(InstancePoolTest, ATickStartsAWholeInstanceAndALaterOneRetiresIt) {
  SavedModel saved;
  InstancePoolOptions o;
  o.weights_dir = saved.dir;
  o.capacity_tokens = 160;
  o.page_tokens = 8;
  o.autoscaler.max_nodes = 2;
  o.autoscaler.keep_alive_s = 0;
  o.autoscaler.cooldown_s = 0;
  o.tick_s = 0;
  auto pool = InstancePool::Start(o);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ((*pool)->Load().instances, 1);
  CompletionParams a;
  a.prompt = Prompt(20, 1);
  a.max_tokens = 100;
  a.stop_at_eos = false;
  CompletionParams b = a;
  b.prompt = Prompt(30, 2);
  b.max_tokens = 110;
  auto sa = (*pool)->Submit(a);
  ASSERT_TRUE(sa.ok()) << sa.status().ToString();
  core::StatusOr<std::shared_ptr<CompletionStream>> sb = core::Internal("not submitted");
  std::thread tb([&] { sb = (*pool)->Submit(b); });
  for (int i = 0; i < 3000 && (*pool)->Load().queued == 0 && !sb.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  (*pool)->Tick();
  tb.join();
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  InstancePool::Snapshot s = (*pool)->Load();
  EXPECT_EQ(s.instances, 2);
  EXPECT_EQ(s.scale_outs, 1);
  EXPECT_EQ((*pool)->start_ms().size(), 2u);
  auto drain = [](CompletionStream& st) {
    std::vector<int32_t> out;
    for (int idle = 0; idle < 600;) {
      auto e = st.Next(0.1);
      if (!e) {
        ++idle;
        continue;
      }
      if (e->kind != CompletionStream::Event::Kind::kToken) break;
      out.push_back(e->token);
    }
    return out;
  };
  EXPECT_EQ(drain(**sa), testing::MonolithicGreedy(*saved.model, a.prompt, a.max_tokens));
  EXPECT_EQ(drain(**sb), testing::MonolithicGreedy(*saved.model, b.prompt, b.max_tokens));
  (*pool)->Tick();  // low use: drain one instance
  (*pool)->Tick();  // it is idle: retire it
  s = (*pool)->Load();
  EXPECT_EQ(s.instances, 1);
  EXPECT_EQ(s.scale_ins, 1);
  // A request larger than an instance is refused at once.
  CompletionParams big = a;
  big.max_tokens = 200;
  EXPECT_EQ((*pool)->Submit(big).status().code(), core::StatusCode::kInfeasible);
}

// Both systems serve a short burst of the same trace; every request completes equal to the
// monolithic model, and the pool never exceeds its maximum.
TEST(ScaleBenchTest, BothSystemsServeTheTraceExactly) {
  SavedModel saved;
  ScaleBenchOptions o;
  o.trace.duration_s = 1.5;
  o.trace.base_rate_per_s = 2;
  o.trace.burst_rate_per_s = 12;
  o.trace.burst_start_s = 0.3;
  o.trace.burst_end_s = 0.8;
  o.trace.prompt_tokens_min = 10;
  o.trace.prompt_tokens_max = 60;
  o.trace.output_tokens_min = 20;
  o.trace.output_tokens_max = 60;
  o.capacity_tokens = 400;
  o.page_tokens = 8;
  o.max_nodes = 3;
  o.keep_alive_s = 0.5;
  o.window_s = 0.5;
  o.min_window_samples = 1;
  o.prefill_tokens_per_step = 16;
  o.settle_s = 2;
  o.check = true;
  o.weights_dir = saved.dir;
  for (ScaleSystem sys : {ScaleSystem::kKernelFlume, ScaleSystem::kInstances}) {
    auto rep = RunScaleBench(*saved.model, o, sys);
    ASSERT_TRUE(rep.ok()) << rep.status().ToString();
    SCOPED_TRACE(rep->system);
    EXPECT_GT(rep->requests, 2);
    EXPECT_EQ(rep->completed, rep->requests) << rep->first_error;
    EXPECT_EQ(rep->failed, 0);
    EXPECT_EQ(rep->mismatched, 0);
    EXPECT_GT(rep->tokens, 0);
    EXPECT_LE(rep->most_units, 3);
    EXPECT_GE(rep->most_units, 1);
    EXPECT_FALSE(rep->tpot.windows.empty());
  }
  o.max_nodes = 0;
  EXPECT_NE(RunScaleBench(*saved.model, o, ScaleSystem::kKernelFlume)
                .status()
                .message()
                .find("max_nodes 0"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::kernelflume
