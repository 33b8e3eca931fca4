// ComparePlanners and BenchPlanners on a tiny cluster (4 ranks): rows and statistics agree
// with the runs they summarise; unknown planner options are rejected with the known keys.
#include "zellige/compare_planners.h"

#include <gtest/gtest.h>

#include "hw/cluster.h"
#include "zellige/bench_planners.h"
#include "zellige/cost_model_analytic.h"

namespace tessera::zellige {
namespace {

AnalyticCostModel TinyCost() {
  hw::Cluster c;
  c.name = "tiny";
  c.provenance = "test";
  c.device = hw::Device{"dev", {.bf16 = 100e12}, 1e12, 80e9, 0.9, 0.5, 0, 0, {}};
  c.nodes = 1;
  c.ranks_per_node = 4;
  c.intra = hw::Link{"nvlink", 100e9, 5e-6};
  c.inter = c.intra;
  return AnalyticCostModel(c, models::DitModel{"tiny", 256, 4, 2, 1024, 0, 2});
}

workload::Batch TinyBatch() { return *workload::GenerateBatch({50, 20000, 5, 4, 3}); }

TEST(ComparePlanners, RowsMatchRunsAndUspIsTheReference) {
  const AnalyticCostModel cost = TinyCost();
  auto entries = SelectPlanners("all");
  ASSERT_TRUE(entries.ok());
  auto cmp = ComparePlanners(TinyBatch(), cost, *entries, {});
  ASSERT_TRUE(cmp.ok()) << cmp.status().ToString();
  ASSERT_EQ(cmp->rows.size(), cmp->runs.size());
  ASSERT_EQ(cmp->rows.size() + cmp->failures.size(), entries->size());
  for (size_t i = 0; i < cmp->rows.size(); ++i) {
    const PlannerComparisonRow& r = cmp->rows[i];
    EXPECT_EQ(r.planner, cmp->runs[i].planner);
    EXPECT_EQ(r.makespan_s, cmp->runs[i].sim.makespan_s);
    EXPECT_GT(r.vs_usp, 0);
    if (r.planner == "usp") {
      EXPECT_DOUBLE_EQ(r.vs_usp, 1.0);
    }
  }
  const core::Json j = ToJson(*cmp);
  ASSERT_EQ(j.size(), cmp->rows.size());
  EXPECT_TRUE(j[0].contains("makespan_s"));
  EXPECT_TRUE(j[0].contains("solve_ms"));
}

// Per rank, compute + exposed communication + idle is the makespan, each part >= 0; a plan of
// whole sequences only (dp) has no communication, usp's splits have some.
TEST(ComparePlanners, RankTimeBreakdownAddsUpToTheMakespan) {
  const AnalyticCostModel cost = TinyCost();
  std::vector<const PlannerEntry*> entries = {*FindPlanner("usp"), *FindPlanner("dp"),
                                              *FindPlanner("zellige")};
  auto cmp = ComparePlanners(TinyBatch(), cost, entries, {});
  ASSERT_TRUE(cmp.ok()) << cmp.status().ToString();
  const core::Json j = RankTimeBreakdownJson(*cmp, "t");
  EXPECT_EQ(j["title"], "t");
  EXPECT_EQ(j["label"], "modeled");
  ASSERT_EQ(j["planners"].size(), 3u);
  for (const core::Json& p : j["planners"]) {
    SCOPED_TRACE(p["planner"].get<std::string>());
    const double makespan = p["makespan_s"];
    ASSERT_EQ(p["compute_s"].size(), 4u);
    double comm_total = 0;
    for (size_t r = 0; r < 4; ++r) {
      const double c = p["compute_s"][r], m = p["comm_s"][r], i = p["idle_s"][r];
      EXPECT_GE(c, 0);
      EXPECT_GE(m, 0);
      EXPECT_GE(i, 0);
      EXPECT_NEAR(c + m + i, makespan, 1e-9 * makespan);
      comm_total += m;
    }
    if (p["planner"] == "dp") {
      EXPECT_EQ(comm_total, 0);
    }
    if (p["planner"] == "usp") {
      EXPECT_GT(comm_total, 0);
    }
  }
}

TEST(ComparePlanners, WithoutUspHasNoSpeedUpAndSingleFailureIsReturned) {
  const AnalyticCostModel cost = TinyCost();
  auto z = SelectPlanners("zellige");
  ASSERT_TRUE(z.ok());
  auto cmp = ComparePlanners(TinyBatch(), cost, *z, {});
  ASSERT_TRUE(cmp.ok()) << cmp.status().ToString();
  ASSERT_EQ(cmp->rows.size(), 1u);
  EXPECT_EQ(cmp->rows[0].vs_usp, 0);
  EXPECT_FALSE(SelectPlanners("nope").ok());
}

TEST(ComparePlanners, RejectsUnknownOptionListingKnownKeys) {
  const AnalyticCostModel cost = TinyCost();
  auto z = SelectPlanners("zellige");
  ASSERT_TRUE(z.ok());
  auto cmp = ComparePlanners(TinyBatch(), cost, *z, {{"zellige.gapp", "1"}});
  ASSERT_FALSE(cmp.ok());
  EXPECT_NE(cmp.status().message().find("zellige.gapp"), std::string::npos);
  EXPECT_NE(cmp.status().message().find("knapformer.bags"), std::string::npos)
      << cmp.status().message();
}

TEST(BenchPlanners, StatisticsSummariseTheBatches) {
  const AnalyticCostModel cost = TinyCost();
  BenchOptions o;
  o.mixes = {"v40", "v60"};
  o.load_tokens_per_rank = 20000;
  o.video_seconds = 5;
  o.batches = 2;
  o.skip_joint = true;
  long calls = 0;
  auto r = BenchPlanners(cost, o, [&](long done, long total) {
    ++calls;
    EXPECT_EQ(total, 4);
    EXPECT_EQ(done, calls);
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(calls, 4);
  ASSERT_EQ(r->batches.size(), 4u);
  ASSERT_EQ(r->mixes.size(), 2u);
  EXPECT_EQ(r->batches[1].seed, 2u);
  EXPECT_EQ(r->batches[0].planners.count("joint"), 0u);
  EXPECT_EQ(r->batches[0].planners.count("joint-binary"), 0u);
  // vs usp of mix 0 is the mean of usp / zellige over its two batches.
  double sum = 0, max_ms = -1;
  for (int b = 0; b < 2; ++b) {
    const BenchBatch& bb = r->batches[b];
    ASSERT_NE(bb.Find("zellige"), nullptr);
    ASSERT_NE(bb.Find("usp"), nullptr);
    sum += bb.Find("usp")->makespan_s / bb.Find("zellige")->makespan_s;
    max_ms = std::max(max_ms, bb.Find("zellige")->solve_ms);
    EXPECT_FALSE(bb.has_excess);
  }
  EXPECT_DOUBLE_EQ(r->mixes[0].Get("vs_usp").mean(), sum / 2);
  EXPECT_EQ(r->mixes[0].Get("excess_pct").n, 0);
  EXPECT_EQ(r->zellige_ms.n, 4);
  EXPECT_GE(r->zellige_ms.max, max_ms);
  EXPECT_EQ(r->excess_pct.n, 0);
  const core::Json j = ToJson(*r);
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[0]["mix"], "v40");
  EXPECT_TRUE(j[0]["planners"]["zellige"].contains("makespan_s"));
}

TEST(BenchPlanners, ValidatesOptions) {
  BenchOptions o;
  o.batches = 0;
  EXPECT_NE(ValidateBenchOptions(o).message().find("batches: got 0"), std::string::npos);
  o.batches = 1;
  o.joint_time_limit_s = 0;
  EXPECT_NE(ValidateBenchOptions(o).message().find("joint_time_limit_s: got"), std::string::npos);
  o.joint_time_limit_s = 1;
  o.mixes = {"x"};
  EXPECT_FALSE(ValidateBenchOptions(o).ok());
  o.mixes = {"v50"};
  o.options = {{"bogus", "1"}};
  EXPECT_FALSE(ValidateBenchOptions(o).ok());
  // joint_time_limit_s sets joint.time_limit_s: as a planner option too it was silently
  // overridden.
  o.options = {{"joint.time_limit_s", "5"}};
  EXPECT_EQ(ValidateBenchOptions(o).message(),
            "joint.time_limit_s: got '5', must not be a planner option here; set "
            "joint_time_limit_s");
  o.options = {};
  o.mixes = {};
  EXPECT_EQ(ValidateBenchOptions(o).message(),
            "mixes: empty, must name at least one mixture (e.g. v50)");
}

}  // namespace
}  // namespace tessera::zellige
