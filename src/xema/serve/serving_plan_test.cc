// The serving plan table: JSON, routing, admission, and a server run by a plan (exact,
// covered and fallback routes, concurrency on one device, misses counted).
#include "xema/serve/serving_plan.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/units.h"
#include "runtime/device_allocator.h"
#include "xema/serve/arena_placer.h"
#include "xema/serve/plan_admission.h"
#include "xema/serve/planned_device.h"
#include "xema/serve/server.h"

namespace tessera::xema {
namespace {

DiffusionRequest Template(int64_t size, int64_t steps, bool cfg = true) {
  DiffusionRequest r;
  r.model = "tiny-t2i";
  r.prompt = "a plan";
  r.width = r.height = size;
  r.steps = steps;
  r.cfg = cfg;
  return r;
}

// A plan with the real arena bytes of each template (RecordTemplatePlan, as the planner and
// the server use).
ServingPlan RealPlan(const std::vector<std::pair<DiffusionRequest, int>>& templates,
                     int64_t budget) {
  ServingPlan p;
  p.budget_bytes = budget;
  p.rate_rps = 1;
  p.slo_scale = 5;
  runtime::HeapDeviceAllocator heap;
  auto pipeline = DiffusionPipeline::Load(*TinyModel("tiny-t2i"), heap);
  EXPECT_TRUE(pipeline.ok());
  p.model_weight_bytes["tiny-t2i"] = (*pipeline)->WeightBytes();
  for (const auto& [r, c] : templates) {
    auto plan = RecordTemplatePlan(**pipeline, r, 0);
    EXPECT_TRUE(plan.ok());
    ServingPlanEntry e;
    e.request = r;
    e.key = TemplateKeyString(r);
    e.concurrency = c;
    e.arena_bytes = (*plan)->layout.arena_bytes;
    p.entries.push_back(e);
  }
  return p;
}

TEST(ServingPlanTest, JsonRoundTripAndBadInput) {
  ServingPlan p;
  p.budget_bytes = 200 << 20;
  p.rate_rps = 2;
  p.slo_scale = 3;
  p.model_weight_bytes["tiny-t2i"] = 38500000;
  ServingPlanEntry e;
  e.request = Template(64, 4);
  e.request.vae_tiles = 2;
  e.key = TemplateKeyString(e.request);
  e.concurrency = 2;
  e.arena_bytes = 10 << 20;
  e.solo_s = 0.1;
  e.p50_s = 0.12;
  e.p99_s = 0.3;
  e.attainment = 0.9;
  e.slo_s = 0.5;
  p.entries.push_back(e);
  const core::Json j = ToJson(p);
  EXPECT_TRUE(IsServingPlanJson(j));
  auto back = ServingPlanFromJson(j, "p.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->entries.size(), 1u);
  EXPECT_EQ(back->entries[0].key, e.key);
  EXPECT_EQ(back->entries[0].request.vae_tiles, 2);
  EXPECT_EQ(back->entries[0].concurrency, 2);
  EXPECT_EQ(back->entries[0].arena_bytes, 10 << 20);
  EXPECT_DOUBLE_EQ(back->entries[0].p99_s, 0.3);
  EXPECT_EQ(ToJson(*back), j);

  auto bad = [&](const std::function<void(core::Json&)>& edit, const std::string& want) {
    core::Json x = j;
    edit(x);
    auto r = ServingPlanFromJson(x, "p.json");
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  };
  bad([](core::Json& x) { x["format"] = "tessera.xema.plan_table/9"; }, "p.json.format");
  bad([](core::Json& x) { x["entries"][0]["template"]["model"] = "sdxl"; }, "sdxl");
  bad([](core::Json& x) { x["entries"][0]["concurrency"] = 0; }, "concurrency");
  bad(
      [](core::Json& x) {
        x["entries"][0]["concurrency"] = 16;
        x["entries"][0]["memory"]["arena_bytes"] = 20 << 20;
      },
      "leaves");
  bad([](core::Json& x) { x["entries"][0]["sp_degree"] = 2; }, "sp_degree");
  bad([](core::Json& x) { x["entries"][0]["batch"] = kMaxRequestBatch + 1; }, "batch");
  bad([](core::Json& x) { x["entries"][0]["batch"] = 0; }, "batch");
  bad([](core::Json& x) { x["entries"][0]["memory"]["allocator"] = "caching"; }, "allocator");
  bad([](core::Json& x) { x["entries"][0]["memory"]["arena_bytes"] = -1; }, "arena_bytes");
  bad([](core::Json& x) { x["entries"].push_back(x["entries"][0]); }, "second entry");
  bad([](core::Json& x) { x["entries"][0]["speed"] = 1; }, "unknown key 'speed'");
  bad([](core::Json& x) { x["models"] = core::Json::object(); }, "p.json.models");
  bad([](core::Json& x) { x["rate_rps"] = 0; }, "rate_rps");

  // The server's side.
  const std::map<std::string, int64_t> w = {{"tiny-t2i", 38500000}};
  EXPECT_TRUE(CheckPlanFitsServer(p, "p.json", p.budget_bytes, 1, w).ok());
  ServingPlan other = p;
  other.device = "h100-80g";
  EXPECT_NE(CheckPlanFitsServer(other, "p.json", p.budget_bytes, 1, w)
                .message()
                .find("p.json.device: got 'h100-80g'"),
            std::string::npos);
  EXPECT_NE(
      CheckPlanFitsServer(p, "p.json", p.budget_bytes - 1, 1, w).message().find("budget_bytes"),
      std::string::npos);
  EXPECT_NE(CheckPlanFitsServer(p, "p.json", p.budget_bytes, 2, w).message().find("devices"),
            std::string::npos);
  EXPECT_NE(CheckPlanFitsServer(p, "p.json", p.budget_bytes, 1, {{"tiny-t2i", 1}})
                .message()
                .find("another model"),
            std::string::npos);
}

TEST(ServingPlanTest, RoutesExactCoveredAndFallback) {
  ServingPlan p;
  ServingPlanEntry big, small;
  big.request = Template(128, 4);
  big.key = TemplateKeyString(big.request);
  big.arena_bytes = 100;
  small.request = Template(64, 8);
  small.key = TemplateKeyString(small.request);
  small.arena_bytes = 40;
  p.entries = {big, small};
  EXPECT_EQ(RouteRequest(p, Template(128, 4)).kind, RouteKind::kExact);
  EXPECT_EQ(RouteRequest(p, Template(64, 8)).entry, 1);
  // 32x32, 4 steps: both cover it; the smaller arena wins.
  Route r = RouteRequest(p, Template(32, 4));
  EXPECT_EQ(r.kind, RouteKind::kCovered);
  EXPECT_EQ(r.entry, 1);
  // 64x64 with 6 steps: only the 64x64 / 8-step entry covers it; 96x96 x 8 steps: none.
  EXPECT_EQ(RouteRequest(p, Template(96, 4)).entry, 0);
  EXPECT_EQ(RouteRequest(p, Template(96, 8)).kind, RouteKind::kFallback);
  // CFG on is not covered by an entry without it; off is covered by on.
  EXPECT_EQ(RouteRequest(p, Template(32, 4, false)).kind, RouteKind::kCovered);
  DiffusionRequest v = Template(32, 4);
  v.model = "tiny-t2v";
  EXPECT_EQ(RouteRequest(p, v).kind, RouteKind::kFallback);
}

TEST(ServingPlanTest, ArenaPlacerIsFirstFitAndAdmissionFollowsThePlan) {
  ArenaPlacer a(100);
  EXPECT_EQ(a.Place(40), 0);
  EXPECT_EQ(a.Place(40), 40);
  EXPECT_FALSE(a.Place(30).has_value());  // 20 left
  EXPECT_TRUE(a.Free(0));
  EXPECT_EQ(a.Place(30), 0);              // the hole at 0
  EXPECT_FALSE(a.Place(50).has_value());  // 10 + 20 free, not in one piece
  EXPECT_EQ(a.used_bytes(), 70);
  EXPECT_FALSE(a.Free(5));

  ServingPlan p;
  ServingPlanEntry e;
  e.concurrency = 2;
  e.arena_bytes = 30;
  p.entries = {e};
  PlanAdmission adm(p, 2, 100);
  const Route exact{RouteKind::kExact, 0};
  auto a0 = adm.Admit(exact), a1 = adm.Admit(exact), a2 = adm.Admit(exact);
  ASSERT_TRUE(a0 && a1 && a2);
  EXPECT_EQ(a0->device, 0);
  EXPECT_EQ(a1->device, 1);  // the least busy device first: the idle one
  EXPECT_EQ(a1->offset, 0);
  EXPECT_EQ(a2->device, 0);  // a tie: the lowest
  EXPECT_EQ(a2->offset, 30);
  const Route fallback{};
  auto f = adm.Admit(fallback);
  EXPECT_FALSE(f.has_value());  // no device idle
  adm.Release(exact, *a1);
  f = adm.Admit(fallback);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->device, 1);
  EXPECT_FALSE(adm.Admit(exact).has_value());  // device 0 at its concurrency, 1 held alone
  adm.Release(fallback, *f);
  EXPECT_TRUE(adm.Admit(exact).has_value());

  // Batch mates: the first waiting requests routed exactly to the head's entry, up to batch - 1.
  p.entries.push_back(e);
  p.entries[0].batch = 3;
  const Route other{RouteKind::kExact, 1}, covered{RouteKind::kCovered, 0};
  const std::vector<Route> waiting = {other, exact, covered, fallback, exact, exact};
  EXPECT_EQ(BatchMates(p, exact, waiting), (std::vector<size_t>{1, 4}));
  EXPECT_TRUE(BatchMates(p, other, waiting).empty());    // entry 1 has batch 1
  EXPECT_TRUE(BatchMates(p, covered, waiting).empty());  // a covered request runs alone
  EXPECT_TRUE(BatchMates(p, fallback, waiting).empty());
}

TEST(ServingPlanTest, AServerRunByAPlanServesHitsAndMissesAndCountsThem) {
  const int64_t budget = 120 * core::kMiBInt64;
  auto plan = std::make_shared<ServingPlan>(RealPlan({{Template(64, 2), 3}}, budget));
  ServerOptions o;
  o.budget_bytes = budget;
  o.http_threads = 8;
  o.serving_plan = plan;
  // Three requests of the planned template held at once on one device (concurrency 3).
  std::atomic<int> running{0}, most{0};
  o.before_run = [&](int) {
    const int n = ++running;
    int m = most.load();
    while (n > m && !most.compare_exchange_weak(m, n)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    --running;
  };
  auto s = DiffusionServer::Start(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto post = [&](int size, int steps) {
    httplib::Client c("127.0.0.1", (*s)->port());
    c.set_read_timeout(60, 0);
    auto res = c.Post("/v1/images/generations",
                      fmt::format(R"({{"model":"tiny-t2i","prompt":"p","size":"{}x{}",)"
                                  R"("num_inference_steps":{},"seed":3,"response_format":"none"}})",
                                  size, size, steps),
                      "application/json");
    core::Json j;
    if (res) j = *core::ParseJson(res->body, "reply");
    return std::make_pair(res ? res->status : 0, j);
  };
  std::vector<std::future<std::pair<int, core::Json>>> f;
  for (int i = 0; i < 3; ++i) f.push_back(std::async(std::launch::async, post, 64, 2));
  for (auto& x : f) {
    auto [status, j] = x.get();
    EXPECT_EQ(status, 200);
    EXPECT_EQ(j["route"], "exact");
    EXPECT_TRUE(j["template_hit"].get<bool>());
  }
  EXPECT_EQ(most.load(), 3);
  auto covered = post(32, 2);
  EXPECT_EQ(covered.first, 200);
  EXPECT_EQ(covered.second["route"], "covered");
  auto fallback = post(128, 2);
  EXPECT_EQ(fallback.first, 200) << fallback.second.dump();
  EXPECT_EQ(fallback.second["route"], "fallback");
  const core::Json m = (*s)->Metrics();
  EXPECT_EQ(m["template_misses"]["covered"], 1);
  EXPECT_EQ(m["template_misses"]["fallback"], 1);
  EXPECT_EQ(m["policy"], "plan");
  (*s)->Stop();

  // Two entries of concurrency 1 each run beside each other on the one device.
  auto two =
      std::make_shared<ServingPlan>(RealPlan({{Template(64, 2), 1}, {Template(32, 2), 1}}, budget));
  EXPECT_EQ(two->SlotsPerDevice(), 2);
  o.serving_plan = two;
  running = 0;
  most = 0;
  {
    auto s2 = DiffusionServer::Start(o);
    ASSERT_TRUE(s2.ok()) << s2.status().message();
    auto post2 = [&](int size) {
      httplib::Client c("127.0.0.1", (*s2)->port());
      c.set_read_timeout(60, 0);
      auto res = c.Post("/v1/images/generations",
                        fmt::format(R"({{"model":"tiny-t2i","prompt":"p","size":"{}x{}",)"
                                    R"("num_inference_steps":2,"response_format":"none"}})",
                                    size, size),
                        "application/json");
      return res ? res->status : 0;
    };
    auto a = std::async(std::launch::async, post2, 64);
    auto b = std::async(std::launch::async, post2, 32);
    EXPECT_EQ(a.get(), 200);
    EXPECT_EQ(b.get(), 200);
    EXPECT_EQ(most.load(), 2);
  }

  // A plan whose arena is not what the template lays out here is refused at start.
  auto wrong = std::make_shared<ServingPlan>(*plan);
  wrong->entries[0].arena_bytes += 512;
  o.serving_plan = wrong;
  o.before_run = {};
  auto refused = DiffusionServer::Start(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("entries[0].memory.arena_bytes"), std::string::npos);
}

}  // namespace
}  // namespace tessera::xema
