// A server run by a plan across devices and batches: an SP entry runs each request as a gang
// over two devices, a batch entry runs waiting requests of its template in one pass; every
// reply's image equals the request's direct run.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "xema/serve/planned_device.h"
#include "xema/serve/server_test_util.h"

namespace tessera::xema {
namespace {

using namespace serve_test;  // NOLINT(google-build-using-namespace): shared test helpers

// A table of one tiny-t2i entry for `request` (256 MiB per device, concurrency 1).
std::shared_ptr<ServingPlan> OneEntryPlan(const DiffusionRequest& request, int64_t weight_bytes,
                                          int devices, int sp_degree, int batch,
                                          int64_t arena_bytes) {
  auto plan = std::make_shared<ServingPlan>();
  plan->budget_bytes = 256 * core::kMiBInt64;
  plan->devices = devices;
  plan->rate_rps = 1;
  plan->slo_scale = 5;
  plan->model_weight_bytes["tiny-t2i"] = weight_bytes;
  ServingPlanEntry e;
  e.request = request;
  e.key = TemplateKeyString(request);
  e.sp_degree = sp_degree;
  e.replicas = devices / sp_degree;
  e.batch = batch;
  e.arena_bytes = arena_bytes;
  plan->entries.push_back(e);
  return plan;
}

// A plan with one entry of SP degree 2 on two devices: each request runs as a gang over both
// devices (both cores), each member in its own recorded arena; the image equals a direct run.
TEST(ServerTest, SequenceParallelEntryRunsAsAGangAndMatchesTheDirectRun) {
  const std::string body =
      R"({"model": "tiny-t2i", "prompt": "a red cube", "size": "64x48", "num_inference_steps": 2,
          "seed": 5})";
  auto g = ParseGenerationRequest(body, GenerationKind::kImage);
  ASSERT_TRUE(g.ok());
  runtime::HeapDeviceAllocator heap;
  auto p0 = DiffusionPipeline::Load(*TinyModel("tiny-t2i"), heap);
  auto p1 = DiffusionPipeline::Load(*TinyModel("tiny-t2i"), heap);
  ASSERT_TRUE(p0.ok() && p1.ok());
  auto members = RecordSpTemplatePlans({p0->get(), p1->get()}, g->request, 0);
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 2u);
  auto one = RecordTemplatePlan(**p0, g->request, 0);
  ASSERT_TRUE(one.ok());
  // Member 0 decodes (its arena holds the VAE); member 1's holds its DiT share only.
  EXPECT_LT((*members)[1]->layout.arena_bytes, (*one)->layout.arena_bytes);
  const auto plan = OneEntryPlan(g->request, (*p0)->WeightBytes(), 2, /*sp_degree=*/2, /*batch=*/1,
                                 SpArenaBytes(*members));
  auto back = ServingPlanFromJson(ToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ServerOptions o = Options(MemoryPolicy::kNone, plan->budget_bytes);
  o.devices = 2;
  o.serving_plan = plan;
  std::atomic<int> started{0};
  o.before_run = [&](int) { ++started; };  // member 0 only: once per request
  auto s = StartServer(o);
  ASSERT_NE(s, nullptr);
  const std::vector<serve::Rgb8Image> direct = DirectRun(body, GenerationKind::kImage);
  std::vector<std::future<Reply>> replies;
  for (int i = 0; i < 3; ++i) {
    replies.push_back(std::async(std::launch::async, [&] { return PostImage(*s, body); }));
  }
  for (auto& f : replies) {
    const Reply r = f.get();
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.body["route"], "exact");
    EXPECT_TRUE(SameFrames(Frames(r), direct));
  }
  EXPECT_EQ(started.load(), 3);
  s->Stop();
}

// A plan entry of batch 2 and concurrency 1 on one device: the first request runs alone (held
// until two more wait), the two waiting ones then run in one pass; each reply is its own
// request's image (different prompts and seeds), equal to the request run directly.
TEST(ServerTest, BatchEntryRunsWaitingRequestsTogetherAndEachGetsItsImage) {
  auto body = [](int seed) {
    return fmt::format(
        R"({{"model": "tiny-t2i", "prompt": "a cube number {}", "size": "32x32",
            "num_inference_steps": 2, "guidance_scale": {}, "seed": {}}})",
        seed, 2 + seed, seed);
  };
  auto g = ParseGenerationRequest(body(1), GenerationKind::kImage);
  ASSERT_TRUE(g.ok());
  runtime::HeapDeviceAllocator heap;
  auto pipeline = DiffusionPipeline::Load(*TinyModel("tiny-t2i"), heap);
  ASSERT_TRUE(pipeline.ok());
  int64_t arena = 0, arena_one = 0;
  for (int k = 1; k <= 2; ++k) {
    auto rec = RecordTemplatePlan(**pipeline, BatchTemplate(g->request, k), 0);
    ASSERT_TRUE(rec.ok()) << rec.status().ToString();
    arena = std::max(arena, (*rec)->layout.arena_bytes);
    if (k == 1) arena_one = (*rec)->layout.arena_bytes;
  }
  EXPECT_GT(arena, arena_one);  // a batch of two holds more than one request
  const auto plan =
      OneEntryPlan(g->request, (*pipeline)->WeightBytes(), 1, /*sp_degree=*/1, /*batch=*/2, arena);
  auto back = ServingPlanFromJson(ToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->entries[0].batch, 2);
  ServerOptions o = Options(MemoryPolicy::kNone, plan->budget_bytes);
  o.serving_plan = plan;
  std::atomic<int> runs{0};
  std::atomic<DiffusionServer*> server{nullptr};
  o.before_run = [&](int) {
    if (runs++ > 0) return;
    for (int i = 0; i < 1000; ++i) {  // the first run waits (<= 10 s) for two more to queue
      DiffusionServer* s = server.load();
      if (s != nullptr && s->queue_length() >= 2) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  auto s = StartServer(o);
  ASSERT_NE(s, nullptr);
  server.store(s.get());
  std::vector<std::future<Reply>> replies;
  for (int i = 1; i <= 3; ++i) {
    replies.push_back(std::async(std::launch::async, [&, i] { return PostImage(*s, body(i)); }));
    if (i == 1) {
      ASSERT_TRUE(Eventually([&] { return runs.load() == 1; }));
    }
  }
  for (int i = 1; i <= 3; ++i) {
    const Reply r = replies[static_cast<size_t>(i - 1)].get();
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.body["route"], "exact");
    EXPECT_TRUE(SameFrames(Frames(r), DirectRun(body(i), GenerationKind::kImage))) << i;
  }
  EXPECT_EQ(runs.load(), 2);  // three requests in two passes
  EXPECT_EQ(s->Metrics()["batch_mates"], 1);
  s->Stop();
}

}  // namespace
}  // namespace tessera::xema
