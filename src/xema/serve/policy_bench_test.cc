#include "xema/serve/policy_bench.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::xema {
namespace {

PolicyBenchPoint Point(MemoryPolicy policy, int64_t budget, double attainment) {
  PolicyBenchPoint p;
  p.policy = policy;
  p.budget_bytes = budget;
  p.rate_rps = 1;
  p.slo_scale = 5;
  p.attainment = attainment;
  return p;
}

TEST(PolicyBenchTest, ComparesXemaWithTheBestBaselineAtEveryPoint) {
  PolicyBenchReport r;
  r.points = {Point(MemoryPolicy::kNone, 1, 0.2),   Point(MemoryPolicy::kTiling, 1, 0.5),
              Point(MemoryPolicy::kXema, 1, 0.9),   Point(MemoryPolicy::kNone, 2, 0.0),
              Point(MemoryPolicy::kXema, 2, 0.4),   Point(MemoryPolicy::kNone, 3, 0.8),
              Point(MemoryPolicy::kStatic, 3, 0.7), Point(MemoryPolicy::kXema, 3, 0.75),
              Point(MemoryPolicy::kNone, 4, 0.0),   Point(MemoryPolicy::kXema, 4, 0.0),
              Point(MemoryPolicy::kNone, 5, 0.3)};  // no xema at budget 5: not compared
  ComparePolicies(&r);
  ASSERT_EQ(r.comparisons.size(), 4u);
  EXPECT_EQ(r.comparisons[0].best_baseline, "tiling");
  EXPECT_NEAR(r.comparisons[0].ratio, 1.8, 1e-12);
  EXPECT_NEAR(r.comparisons[0].xema_minus_best, 0.4, 1e-12);
  EXPECT_TRUE(std::isinf(r.comparisons[1].ratio));
  EXPECT_EQ(r.comparisons[2].best_baseline, "none");
  EXPECT_NEAR(r.comparisons[2].xema_minus_best, -0.05, 1e-12);
  EXPECT_EQ(r.comparisons[3].ratio, 1.0);  // both 0
  // Budget 3 is 5 points below the best: not "at least the best" (2-point tolerance).
  EXPECT_EQ(r.xema_at_least_best, 3);
  EXPECT_EQ(r.infinite_ratios, 1);
  EXPECT_NEAR(r.ratio_min, 0.75 / 0.8, 1e-12);
  EXPECT_NEAR(r.ratio_max, 1.8, 1e-12);
  EXPECT_NEAR(r.ratio_median, 1.0, 1e-12);  // of {0.9375, 1.0, 1.8}
  EXPECT_EQ(ToJson(r)["comparisons"][1]["ratio"], "inf");
}

TEST(PolicyBenchTest, SweepsPoliciesOnTheSameArrivals) {
  PolicyBenchOptions o;
  o.policies = {MemoryPolicy::kNone, MemoryPolicy::kXema};
  o.budgets_bytes = {int64_t{256} << 20};
  o.rates_rps = {2};
  o.slo_scales = {1000, 1e-6};
  auto mix = ReadMix(R"([{"model": "tiny-t2i", "size": "16x16", "steps": 1}])");
  ASSERT_TRUE(mix.ok());
  o.mix = *mix;
  o.duration_s = 1;
  o.seed = 4;
  int calls = 0;
  o.progress = [&](int, int, const std::string&) { ++calls; };
  auto r = RunPolicyBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(calls, 3);
  ASSERT_EQ(r->points.size(), 4u);
  ASSERT_EQ(r->isolated_s.size(), 1u);
  EXPECT_GT(r->isolated_s[0], 0);
  for (const PolicyBenchPoint& p : r->points) {
    EXPECT_EQ(p.planned, r->points[0].planned);  // the same arrivals for every policy
    EXPECT_EQ(p.completed, p.planned);
    EXPECT_EQ(p.attainment, p.slo_scale == 1000 ? 1.0 : 0.0);
    EXPECT_EQ(p.refused, "");
  }
  EXPECT_EQ(r->comparisons.size(), 2u);
  EXPECT_EQ(r->xema_at_least_best, 2);
}

// A budget no template fits: the load generator stops after the solo requests, and the point
// says why instead of reporting a plain 0%.
TEST(PolicyBenchTest, APointWhereNothingIsServedSaysWhy) {
  PolicyBenchOptions o;
  o.policies = {MemoryPolicy::kNone};
  o.budgets_bytes = {int64_t{1} << 20};
  o.rates_rps = {2};
  o.slo_scales = {5};
  auto mix = ReadMix(R"([{"model": "tiny-t2i", "size": "16x16", "steps": 1}])");
  ASSERT_TRUE(mix.ok());
  o.mix = *mix;
  o.duration_s = 0.5;
  auto r = RunPolicyBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->points.size(), 1u);
  EXPECT_EQ(r->points[0].attainment, 0.0);
  EXPECT_NE(r->points[0].refused.find("no template of the mix is served alone"), std::string::npos)
      << r->points[0].refused;
  EXPECT_EQ(ToJson(*r)["points"][0]["refused"], r->points[0].refused);
}

TEST(PolicyBenchTest, BadOptionsAreNamed) {
  PolicyBenchOptions o;
  EXPECT_NE(RunPolicyBench(o).status().message().find("policies"), std::string::npos);
  o.policies = {MemoryPolicy::kNone};
  EXPECT_NE(RunPolicyBench(o).status().message().find("budgets"), std::string::npos);
  o.budgets_bytes = {1 << 20};
  o.rates_rps = {-1};
  EXPECT_NE(RunPolicyBench(o).status().message().find("mix"), std::string::npos);
  o.mix = *ReadMix(R"([{"model": "tiny-t2i", "size": "16x16", "steps": 1}])");
  EXPECT_NE(RunPolicyBench(o).status().message().find("rates: got -1"), std::string::npos);
}

}  // namespace
}  // namespace tessera::xema
