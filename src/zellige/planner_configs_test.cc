// PlannerConfigs lists every config a planner may place: checked against the plans of every
// planner `--planner all` runs, on seeded random batches and rank counts that are and are not
// powers of two.
#include "zellige/planner_configs.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/rng.h"
#include "zellige/cost_model_analytic.h"
#include "zellige/evaluate.h"
#include "zellige/test_fixtures.h"

namespace tessera::zellige {
namespace {

using testing::MakeBatch;
using testing::TinyCluster;

TEST(PlannerConfigsTest, Degrees) {
  EXPECT_EQ(PlannerDegrees(16), (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(PlannerDegrees(1), (std::vector<int>{1}));
  EXPECT_EQ(PlannerDegrees(6), (std::vector<int>{1, 2, 3, 4, 6}));       // usp 6, bag g3
  EXPECT_EQ(PlannerDegrees(10), (std::vector<int>{1, 2, 4, 5, 8, 10}));  // bags g5, g2
  EXPECT_EQ(PlannerDegrees(0), (std::vector<int>{}));
  const std::vector<ParallelConfig> c6 = PlannerConfigs(6, 4);
  EXPECT_NE(std::find(c6.begin(), c6.end(), ParallelConfig{1, 2, 3}), c6.end());
  EXPECT_NE(std::find(c6.begin(), c6.end(), ParallelConfig{3, 1, 1}), c6.end());
  EXPECT_EQ(std::find(c6.begin(), c6.end(), ParallelConfig{1, 1, 5}), c6.end());
}

TEST(PlannerConfigsTest, CoversEveryPlannersPlans) {
  core::Rng rng(2112);
  int planned = 0;
  for (int ranks : {2, 3, 5, 6, 8, 12}) {
    for (int heads : {4, 6}) {
      AnalyticCostModel cost(TinyCluster(1, ranks),
                             models::DitModel{"t", 16 * heads, heads, 1, 128, 0, 2});
      const std::vector<ParallelConfig> allowed = PlannerConfigs(ranks, heads);
      std::vector<int64_t> tokens;
      for (int s = 0; s < 6; ++s) tokens.push_back(1 + static_cast<int64_t>(rng.Below(4000)));
      const workload::Batch batch = MakeBatch(tokens);
      for (const PlannerEntry& e : PlannerRegistry()) {
        if (!e.in_all) continue;  // the exact references are slow
        SCOPED_TRACE(e.name + " at " + std::to_string(ranks) + " ranks, " + std::to_string(heads) +
                     " heads");
        auto run = RunPlanner(e, batch, cost, {});
        if (!run.ok()) continue;  // e.g. memory; what is placed is what matters
        ++planned;
        for (const Placement& p : run->plan.placements) {
          EXPECT_NE(std::find(allowed.begin(), allowed.end(), p.config), allowed.end())
              << p.config.ToString();
        }
      }
    }
  }
  EXPECT_GE(planned, 6 * 2 * 5);  // most runs plan
}

}  // namespace
}  // namespace tessera::zellige
