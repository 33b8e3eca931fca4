// The run memory check (run_memory.h): rank token counts by hand, the refusal message, and a
// billion-token plan refused alike on every fake rank before anything is allocated.
#include "zellige/engine/run_memory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/in_process_communicator.h"
#include "zellige/engine/attention_run.h"

namespace tessera::zellige::engine {
namespace {

// Two ranks: sequence 0 (1000 tokens) split (q,h,k) = (1,2,1) over both, sequence 1 (300
// tokens) whole on rank 1.
void TwoRankCase(int64_t big_tokens, Plan* plan, workload::Batch* batch) {
  batch->sequences.resize(2);
  batch->sequences[0].tokens = big_tokens;
  batch->sequences[1].tokens = 300;
  plan->num_ranks = 2;
  plan->placements = {{0, ParallelConfig{1, 2, 1}, {0, 1}}, {1, ParallelConfig{}, {1}}};
}

TEST(RunMemoryTest, RankTokensAndEstimates) {
  Plan plan;
  workload::Batch batch;
  TwoRankCase(1000, &plan, &batch);
  // Rank 1: 1000/2 + 1000/h(2) for the split sequence, + 300 whole.
  EXPECT_EQ(MaxRankTokens(plan, batch), 500 + 500 + 300);
  const double plain = AttentionRunBytesPerRank(plan, batch, 256, false);
  EXPECT_DOUBLE_EQ(plain, kRunBaseBytes + kAttentionBytesPerTokenWidth * 256.0 * 1300);
  EXPECT_DOUBLE_EQ(AttentionRunBytesPerRank(plan, batch, 256, true),
                   plain + kReferenceBytesPerTokenWidth * 256.0 * 1300);
  models::SmallDitConfig cfg;
  EXPECT_GT(TrainRunBytesPerRank(plan, batch, cfg, false), plain);
}

TEST(RunMemoryTest, RefusesWhatDoesNotFit) {
  EXPECT_TRUE(CheckRunFitsMemory(1e9, 4, int64_t{5} << 30).ok());
  const core::Status st = CheckRunFitsMemory(2e9, 4, int64_t{4} << 30);
  EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("needs about 2.00 GB per rank x 4 ranks"), std::string::npos)
      << st.message();
  EXPECT_TRUE(CheckRunFitsMemory(1e30, 4, 0).ok());  // unknown memory: not checked
}

TEST(RunMemoryTest, BillionTokenPlanIsRefusedOnEveryRankBeforeAllocating) {
  Plan plan;
  workload::Batch batch;
  TwoRankCase(int64_t{1000000000}, &plan, &batch);
  std::vector<core::Status> st(2);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    AttentionRunOptions o;
    st[world.rank()] = RunAttentionSteps(world, plan, batch, o).status();
  });
  for (const core::Status& s : st) {
    EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("use a smaller token_scale"), std::string::npos) << s.message();
  }
  EXPECT_EQ(st[0].message(), st[1].message());
}

}  // namespace
}  // namespace tessera::zellige::engine
