// The small GPT trained with TP on in-process ranks over a6000x8's emulated links (a tiny time
// scale, so links are fast): every strategy's losses equal the single process's, and the
// strategy choice per operator.
#include "compass/engine/gpt_run.h"

#include <gtest/gtest.h>

#include <cmath>

#include "comm/in_process_communicator.h"
#include "compass/engine/overlap_strategy.h"

namespace tessera::compass {
namespace {

core::StatusOr<GptRun> RunOn(int ranks, const std::string& strategy, int steps = 3,
                             runtime::ComputeMode compute = runtime::ComputeMode::kReal) {
  auto topo = hw::TopologyPreset("a6000x8");
  if (!topo.ok()) return topo.status();
  auto scale = runtime::FixedTimeScale(topo->device(), 1e-3);
  if (!scale.ok()) return scale.status();
  GptRunConfig config;
  config.model = "gpt-tiny";
  config.batch = 2;
  config.seq = 32;
  config.steps = steps;
  config.strategy = strategy;
  config.check = compute == runtime::ComputeMode::kReal;
  config.compute = compute;
  std::vector<core::StatusOr<GptRun>> out(ranks, core::Internal("not run"));
  comm::RunInProcessRanks(ranks, [&](comm::Communicator& world) {
    out[world.rank()] = RunGpt(world, *topo, *scale, config);
  });
  for (int r = 1; r < ranks; ++r) {
    if (!out[r].ok()) return out[r].status();
    if (out[0].ok() && out[r]->losses != out[0]->losses) {
      return core::Internal("rank " + std::to_string(r) + " reports other losses than rank 0");
    }
  }
  return std::move(out[0]);
}

// --check for every registry strategy and auto at TP 2 and 4: the run itself fails when a
// step's loss is off by more than 1e-5 relative; the figures are asserted here as well.
TEST(CompassGptRun, EveryStrategyTrainsLikeOneProcess) {
  std::vector<std::string> strategies = {"auto"};
  for (StrategyFamily f : AllStrategyFamilies()) {
    strategies.push_back((TakesDegree(f) ? StrategyName::Decomp(2) : StrategyName::Of(f)).Name());
  }
  for (int tp : {2, 4}) {
    for (const std::string& s : strategies) {
      auto r = RunOn(tp, s);
      ASSERT_TRUE(r.ok()) << "tp " << tp << " " << s << ": " << r.status().ToString();
      ASSERT_EQ(r->losses.size(), 3u);
      ASSERT_EQ(r->reference_losses.size(), 3u);
      for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(std::isfinite(r->losses[i]));
        EXPECT_LE(std::abs(r->losses[i] - r->reference_losses[i]),
                  1e-5 * std::abs(r->reference_losses[i]))
            << "tp " << tp << " " << s << " step " << i;
      }
      EXPECT_LE(r->max_loss_rel_diff, 1e-5);
      EXPECT_NEAR(r->losses[0], std::log(128.0), 0.5);  // starts near uniform over V = 128
      ASSERT_EQ(r->choices.size(), 12u);
      ASSERT_EQ(r->step_s.size(), 3u);
      EXPECT_GT(r->step_summary.median, 0);
      EXPECT_EQ(r->op_s.size(), 12u);
    }
  }
}

// The strategy is the one asked for on every operator; auto's picks carry a reason.
TEST(CompassGptRun, ChoicesFollowTheStrategy) {
  auto r = RunOn(2, "fused-ring2", 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const GptOpChoice& c : r->choices) EXPECT_EQ(c.strategy, "fused-ring2") << c.op;
  // The last step's trace: every rank's 12 operators x 2 layers, in order.
  ASSERT_EQ(r->last_step_spans.size(), 2u);
  ASSERT_EQ(r->last_step_ops.size(), 24u);
  EXPECT_EQ(r->last_step_ops.front(), "qkv");
  EXPECT_EQ(r->last_step_ops.back(), "qkv-wgrad");
  for (const auto& spans : r->last_step_spans) {
    ASSERT_EQ(spans.size(), 24u);
    for (size_t i = 0; i < spans.size(); ++i) {
      EXPECT_LE(spans[i].first, spans[i].second);
      if (i > 0) {
        EXPECT_GE(spans[i].first, spans[i - 1].second);
      }
    }
  }
  EXPECT_EQ(GptStepTrace(*r).size(), 48u + 2u);  // the spans and the two track names
  auto a = RunOn(2, "auto", 1);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  for (const GptOpChoice& c : a->choices) {
    EXPECT_FALSE(c.reason.empty()) << c.op;
    EXPECT_GT(c.predicted_s, 0) << c.op;
    EXPECT_LE(c.predicted_s, c.none_s * (1 + 1e-9)) << c.op;
  }
}

// Modeled compute: the TP GEMMs sleep for their profiled times; every step is timed.
TEST(CompassGptRun, ModeledComputeRunsEveryStep) {
  auto r = RunOn(4, "fused-ring2", 2, runtime::ComputeMode::kModeled);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->compute, runtime::ComputeMode::kModeled);
  ASSERT_EQ(r->step_s.size(), 2u);
  for (double s : r->step_s) EXPECT_GT(s, 0);
  EXPECT_TRUE(r->reference_losses.empty());
  EXPECT_EQ(ToJson(*r)["compute"], "modeled");
}

std::vector<std::pair<std::string, TpOpShape>> TwoOps() {
  return {{"qkv", TpOpShape{TpOpKind::kAllGatherGemm, 4096, 768, 1024, 4, "qkv"}},
          {"proj", TpOpShape{TpOpKind::kGemmReduceScatter, 4096, 1024, 256, 4, "proj"}}};
}

// auto with a collective that dwarfs the GEMM overlaps; with a free collective it keeps none
// (the never-regress margin).
TEST(CompassGptRun, AutoOverlapsOnlyWhenItPays) {
  const OpGemmTimer gemm = [](bool, int64_t m, int64_t n, int64_t k) {
    return 2.0 * m * n * k / 100e12;
  };
  const OpCollectiveTimer slow = [](const TpOpShape&, comm::LinkAlgo, double wire) {
    return 1e-5 + wire / 10e9;
  };
  const OpCollectiveTimer free_links = [](const TpOpShape&, comm::LinkAlgo, double) { return 0.0; };
  auto busy = ChooseGptStrategies("auto", TwoOps(), gemm, slow, OverheadTable{}, {});
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  for (const GptOpChoice& c : *busy) {
    EXPECT_NE(c.strategy, "none") << c.op;
    EXPECT_LT(c.predicted_s, c.none_s) << c.op;
  }
  auto idle = ChooseGptStrategies("auto", TwoOps(), gemm, free_links, OverheadTable{}, {});
  ASSERT_TRUE(idle.ok()) << idle.status().ToString();
  for (const GptOpChoice& c : *idle) EXPECT_EQ(c.strategy, "none") << c.op;
}

TEST(CompassGptRun, BadInputIsRefused) {
  const OpGemmTimer gemm = [](bool, int64_t, int64_t, int64_t) { return 1e-3; };
  const OpCollectiveTimer coll = [](const TpOpShape&, comm::LinkAlgo, double) { return 1e-3; };
  auto unknown = ChooseGptStrategies("ring9", TwoOps(), gemm, coll, OverheadTable{}, {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("ring9"), std::string::npos);
  // decomp:3 divides neither qkv's M/t = 1024 rows nor proj's N = 1024.
  auto degree = ChooseGptStrategies("decomp:3", TwoOps(), gemm, coll, OverheadTable{}, {});
  ASSERT_FALSE(degree.ok());
  EXPECT_NE(degree.status().message().find("operator qkv"), std::string::npos);

  auto topo = hw::TopologyPreset("a6000x8");
  ASSERT_TRUE(topo.ok());
  auto scale = runtime::FixedTimeScale(topo->device(), 1e-3);
  ASSERT_TRUE(scale.ok());
  auto run = [&](GptRunConfig config, int ranks) {
    std::vector<core::Status> st(ranks);
    comm::RunInProcessRanks(ranks, [&](comm::Communicator& world) {
      st[world.rank()] = RunGpt(world, *topo, *scale, config).status();
    });
    return st[0];
  };
  GptRunConfig c;
  c.model = "gpt-tiny";
  c.batch = 1;
  c.seq = 63;  // 63 tokens on 2 ranks
  core::Status s = run(c, 2);
  EXPECT_NE(s.message().find("not divisible by tp 2"), std::string::npos) << s.ToString();
  c.seq = 65;  // beyond max_seq 64
  s = run(c, 2);
  EXPECT_NE(s.message().find("max_seq"), std::string::npos) << s.ToString();
  c.seq = 32;
  c.model = "gpt-huge";
  s = run(c, 2);
  EXPECT_NE(s.message().find("gpt-tiny"), std::string::npos) << s.ToString();
  c.model = "gpt-tiny";
  c.steps = 0;
  s = run(c, 2);
  EXPECT_NE(s.message().find("steps: got"), std::string::npos) << s.ToString();
  c.steps = 1;
  c.check = true;
  c.compute = runtime::ComputeMode::kModeled;
  s = run(c, 2);
  EXPECT_NE(s.message().find("check: needs compute real"), std::string::npos) << s.ToString();
  c.check = false;
  c.compute = runtime::ComputeMode::kReal;
  s = run(c, 3);  // 4 heads on 3 ranks
  EXPECT_NE(s.message().find("tp 3"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace tessera::compass
