// ElasticTrainer on in-process ranks: any data x pipeline layout of the same tensor-parallel
// degree trains to the same bits as the single-process twin (dp = pp = 1), and so does a job
// that loses ranks at a step boundary and continues under the recovery plan (state moved from
// the survivors, micro-batches redistributed).
#include "elaswave/trainer.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "comm/in_process_communicator.h"

namespace tessera::elaswave {
namespace {

struct StepRecord {
  double loss = 0;
  std::map<std::pair<int, int>, uint64_t> digests;  // (slot, tp rank) -> digest
  bool holders_agree = true;
};

TrainerOptions Options(int dp, int pp, int tp, float dropout) {
  TrainerOptions o;
  o.model.vocab = 64;
  o.model.hidden = 32;
  o.model.num_heads = 4;
  o.model.num_layers = 4;
  o.model.ffn_hidden = 64;
  o.model.max_seq = 16;
  o.model.dropout = dropout;
  o.seq = 8;
  o.shape.dp = dp;
  o.shape.pp = pp;
  o.shape.tp = tp;
  o.shape.num_blocks = 4;
  o.shape.global_batch = 8;
  o.shape.micro_batch = 1;
  o.data_seed = 3;
  o.adamw.learning_rate = 1e-2f;
  return o;
}

// Runs `steps` steps; before step `fail_step` the ranks in `dead` leave (their threads return)
// and the others continue under Replan.
std::vector<StepRecord> RunJob(const TrainerOptions& o, int steps, int fail_step = -1,
                               std::set<int> dead = {}) {
  std::vector<StepRecord> records(static_cast<size_t>(steps));
  std::mutex mu;
  const auto costs = GptSlotCosts(DimsOf(o.model, o.seq), o.shape.micro_batch, o.shape.tp);
  comm::RunInProcessRanks(o.shape.processes(), [&](comm::Communicator& world) {
    const int me = world.rank();
    auto trainer = ElasticTrainer::Create(o, me);
    ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
    auto plan = InitialPlan(o.shape, costs);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE((*trainer)->InitFresh(*plan).ok());
    ASSERT_TRUE((*trainer)->Install(*plan, world).ok());
    comm::Communicator* comm = &world;
    for (int t = 0; t < steps; ++t) {
      if (t == fail_step) {
        if (dead.count(me)) return;
        auto next = Replan(o.shape, costs, *plan, dead);
        ASSERT_TRUE(next.ok()) << next.status().ToString();
        std::vector<int> live;
        for (int w = 0; w < o.shape.processes(); ++w) {
          if (!dead.count(w)) live.push_back(w);
        }
        auto sub = world.Sub(live);
        ASSERT_TRUE(sub.ok()) << sub.status().ToString();
        comm = *sub;
        const core::Status st = (*trainer)->Install(*next, *comm);
        ASSERT_TRUE(st.ok()) << st.ToString();
        plan = next;
      }
      if (!(*trainer)->computing()) continue;
      auto report = (*trainer)->Compute(t);
      ASSERT_TRUE(report.ok()) << "rank " << me << " step " << t << ": "
                               << report.status().ToString();
      ASSERT_TRUE((*trainer)->Apply().ok());
      std::lock_guard<std::mutex> lock(mu);
      StepRecord& rec = records[static_cast<size_t>(t)];
      rec.loss = report->loss;
      for (const SlotDigest& d : (*trainer)->Digests()) {
        auto [it, inserted] = rec.digests.emplace(std::make_pair(d.slot, d.tp_rank), d.digest);
        if (!inserted && it->second != d.digest) rec.holders_agree = false;
      }
    }
  });
  return records;
}

void ExpectSameBits(const std::vector<StepRecord>& a, const std::vector<StepRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t t = 0; t < a.size(); ++t) {
    EXPECT_TRUE(a[t].holders_agree) << "step " << t;
    EXPECT_TRUE(b[t].holders_agree) << "step " << t;
    EXPECT_EQ(a[t].loss, b[t].loss) << "step " << t;  // bitwise: doubles compared exactly
    EXPECT_EQ(a[t].digests, b[t].digests) << "step " << t;
  }
}

TEST(ElasticTrainer, EveryLayoutMatchesTheSingleProcessTwin) {
  const auto twin = RunJob(Options(1, 1, 1, 0.1f), 3);
  ASSERT_EQ(twin[0].digests.size(), 6u);  // 4 blocks + embedding + head
  EXPECT_GT(twin[0].loss, 0);
  EXPECT_NE(twin[0].digests, twin[2].digests);  // it trains
  ExpectSameBits(twin, RunJob(Options(2, 1, 1, 0.1f), 3));
  ExpectSameBits(twin, RunJob(Options(1, 2, 1, 0.1f), 3));
  ExpectSameBits(twin, RunJob(Options(2, 2, 1, 0.1f), 3));
}

TEST(ElasticTrainer, TensorParallelLayoutsMatchTheirTwin) {
  const auto twin = RunJob(Options(1, 1, 2, 0.1f), 2);
  ExpectSameBits(twin, RunJob(Options(2, 2, 2, 0.1f), 2));
}

TEST(ElasticTrainer, LosingARankKeepsTheBits) {
  const auto twin = RunJob(Options(1, 1, 1, 0.1f), 4);
  // Rank 3 (pipeline 1, stage 1) leaves before step 2: pipeline 1 runs every slot on rank 2,
  // which receives the second stage's state from rank 1.
  ExpectSameBits(twin, RunJob(Options(2, 2, 1, 0.1f), 4, /*fail_step=*/2, {3}));
  // A whole replica leaves: its micro-batches go to the other.
  ExpectSameBits(twin, RunJob(Options(2, 2, 1, 0.1f), 4, /*fail_step=*/1, {0, 1}));
}

TEST(ElasticTrainer, LosingATensorParallelRankKeepsTheBits) {
  const auto twin = RunJob(Options(1, 1, 2, 0.1f), 3);
  // Rank 5 (pipeline 1, stage 0, tp rank 1): its TP group leaves; rank 4 becomes a spare.
  ExpectSameBits(twin, RunJob(Options(2, 2, 2, 0.1f), 3, /*fail_step=*/1, {5}));
}

}  // namespace
}  // namespace tessera::elaswave
