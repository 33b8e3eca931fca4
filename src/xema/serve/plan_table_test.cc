#include "xema/serve/plan_table.h"

#include <gtest/gtest.h>

#include <memory>

#include "xema/pipeline/mitigation_planner.h"

namespace tessera::xema {
namespace {

// A plan as `xema mitigate --json` writes it, for a 128x128 image with 2 VAE tiles and the
// latent offloaded.
core::Json Plan(int64_t limit_bytes, bool fits = true) {
  MitigationPlan p;
  p.request.width = p.request.height = 128;
  p.request.steps = 1;
  p.request.vae_tiles = 2;
  p.request.offload.latent = true;
  p.limit_bytes = limit_bytes;
  p.fits = fits;
  p.verified_peak_bytes = limit_bytes / 2;
  return ToJson(p);
}

TEST(PlanTableTest, ReadsWhatMitigateWrites) {
  auto t = PlanTableFromJson(Plan(64 << 20), "plans.json", 64 << 20);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->size(), 1u);
  const PlannedTemplate& p = t->front();
  EXPECT_EQ(p.key, "tiny-t2i 128x128x1 steps 1 cfg on");
  EXPECT_EQ(p.plan.settings.vae_tiles, 2);
  EXPECT_TRUE(p.plan.settings.offload.latent);
  EXPECT_FALSE(p.plan.settings.offload.image);
  EXPECT_EQ(p.plan.labels, (std::vector<std::string>{"vae_tiles=2", "offload:latent"}));
  EXPECT_EQ(p.plan.verified_peak_bytes, 32 << 20);
  EXPECT_TRUE(p.plan.refused.ok());
  // A plan that did not fit refuses its template with 507's status.
  auto refused = PlanTableFromJson(core::Json::array({Plan(64 << 20, false)}), "t", 64 << 20);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->front().plan.refused.code(), core::StatusCode::kInfeasible);
}

TEST(PlanTableTest, BadTablesAreNamed) {
  auto message = [](const core::Json& j, int64_t budget) {
    auto t = PlanTableFromJson(j, "plans.json", budget);
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string() : t.status().message();
  };
  EXPECT_NE(message(Plan(128 << 20), 64 << 20).find("plans.json.limit_bytes: got 134217728"),
            std::string::npos);
  EXPECT_NE(message(core::Json::array({Plan(1 << 20), Plan(1 << 20)}), 64 << 20)
                .find("plans.json[1]: a second plan for template tiny-t2i 128x128x1"),
            std::string::npos);
  core::Json bad = Plan(1 << 20);
  bad["request"]["offload"] = core::Json::array({"disk"});
  EXPECT_NE(message(bad, 64 << 20).find("plans.json.request.offload: got \"disk\""),
            std::string::npos);
  bad = Plan(1 << 20);
  bad["request"]["vae_tiles"] = 0;
  EXPECT_NE(message(bad, 64 << 20).find("vae_tiles"), std::string::npos);
  bad = Plan(1 << 20);
  bad["template"]["model"] = "tiny-xl";
  EXPECT_NE(message(bad, 64 << 20).find("plans.json.template"), std::string::npos);
  EXPECT_NE(message(core::Json::array({7}), 64 << 20).find("plans.json[0]: got 7"),
            std::string::npos);
  EXPECT_EQ(ReadPlanTable("/nonexistent/plans.json", 1).status().code(),
            core::StatusCode::kNotFound);
}

// A device whose cache holds the table's plan runs the template with it, planning nothing.
TEST(PlanTableTest, ADeviceRunsThePreloadedPlan) {
  auto t = PlanTableFromJson(Plan(1 << 30), "plans.json", 1 << 30);
  ASSERT_TRUE(t.ok());
  TemplateCache cache;
  cache.InsertMitigated(t->front().key, std::make_shared<MitigatedTemplate>(t->front().plan));
  auto tier = HostTier::Create(1e12);
  ASSERT_TRUE(tier.ok());
  ServeDevice device(0, MemoryPolicy::kCaching, 1 << 30, &cache, std::move(*tier));
  DiffusionRequest r;
  r.width = r.height = 128;
  r.steps = 1;
  auto run = device.Execute(r);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->mitigations, (std::vector<std::string>{"vae_tiles=2", "offload:latent"}));
}

}  // namespace
}  // namespace tessera::xema
