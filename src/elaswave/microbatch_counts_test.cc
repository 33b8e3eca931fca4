#include "elaswave/microbatch_counts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/rng.h"

namespace tessera::elaswave {
namespace {

double Makespan(const std::vector<PipelineTiming>& pipes, const std::vector<int64_t>& m) {
  double t = 0;
  for (size_t p = 0; p < pipes.size(); ++p) {
    if (m[p] > 0) t = std::max(t, static_cast<double>(m[p] + pipes[p].stages - 1) * pipes[p].tau_s);
  }
  return t;
}

// The best makespan over every way to split M among the pipelines (enumeration).
double BestMakespan(const std::vector<PipelineTiming>& pipes, int64_t M) {
  double best = 1e300;
  std::vector<int64_t> m(pipes.size(), 0);
  const auto recurse = [&](auto&& self, size_t p, int64_t left) -> void {
    if (p + 1 == pipes.size()) {
      m[p] = left;
      best = std::min(best, Makespan(pipes, m));
      return;
    }
    for (int64_t k = 0; k <= left; ++k) {
      m[p] = k;
      self(self, p + 1, left - k);
    }
  };
  recurse(recurse, 0, M);
  return best;
}

TEST(MicroBatchCounts, EqualPipelinesSplitEvenly) {
  auto a = AssignMicroBatches(16, {{2, 1.0}, {2, 1.0}});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->count, (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(a->first, (std::vector<int64_t>{0, 8}));
  EXPECT_DOUBLE_EQ(a->makespan_s, 9.0);
}

TEST(MicroBatchCounts, ASlowerPipelineTakesFewerAndTheBatchIsKept) {
  // Pipeline 0 lost a stage: one stage running everything (tau doubled).
  auto a = AssignMicroBatches(16, {{1, 2.0}, {2, 1.0}});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->count[0] + a->count[1], 16);
  EXPECT_LT(a->count[0], a->count[1]);
  EXPECT_DOUBLE_EQ(a->makespan_s, BestMakespan({{1, 2.0}, {2, 1.0}}, 16));
}

TEST(MicroBatchCounts, GreedyIsOptimalOnRandomInstances) {
  core::Rng rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int P = 1 + static_cast<int>(rng.Below(3));
    const int64_t M = static_cast<int64_t>(rng.Below(13));
    std::vector<PipelineTiming> pipes(P);
    for (auto& p : pipes) {
      p.stages = 1 + static_cast<int>(rng.Below(4));
      p.tau_s = rng.Below(2) == 0 ? 1.0 : rng.Uniform(0.5, 3.0);
    }
    auto a = AssignMicroBatches(M, pipes);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(std::accumulate(a->count.begin(), a->count.end(), int64_t{0}), M);
    EXPECT_NEAR(a->makespan_s, BestMakespan(pipes, M), 1e-12) << "trial " << trial;
  }
}

TEST(MicroBatchCounts, BadInputs) {
  EXPECT_FALSE(AssignMicroBatches(4, {}).ok());
  EXPECT_FALSE(AssignMicroBatches(4, {{0, 1.0}}).ok());
  EXPECT_FALSE(AssignMicroBatches(4, {{1, 0.0}}).ok());
  EXPECT_FALSE(AssignMicroBatches(-1, {{1, 1.0}}).ok());
}

TEST(SamplePermutation, IsAPermutationFixedBySeedAndStep) {
  const std::vector<int64_t> a = SamplePermutation(32, 5, 3);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_EQ(a, SamplePermutation(32, 5, 3));
  EXPECT_NE(a, SamplePermutation(32, 5, 4));
  EXPECT_NE(a, SamplePermutation(32, 6, 3));
}

}  // namespace
}  // namespace tessera::elaswave
