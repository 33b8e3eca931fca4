// The --train --check comparisons: CompareFirstStep on a
// 2-fake-rank DistributedTrainStep (passes as computed, fails once a gradient or an output
// value is perturbed).
#include "zellige/engine/dit_reference_training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "comm/in_process_communicator.h"
#include "zellige/engine/dit_training_test_util.h"

namespace tessera::zellige::engine {
namespace {

TEST(ReferenceTraining, LossCurveMatchesRunReferenceTraining) {
  const testing::TrainCase c = testing::MixedCase();
  auto curve = ReferenceLossCurve(testing::TinyConfig(), testing::TinyAdamW(), c.batch,
                                  testing::kDataSeed, 2);
  auto run = RunReferenceTraining(testing::TinyConfig(), testing::TinyAdamW(), c.batch,
                                  testing::kDataSeed, 2);
  ASSERT_TRUE(curve.ok() && run.ok());
  EXPECT_EQ(*curve, run->losses);
  auto model = models::SmallDit::Create(testing::TinyConfig());
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(static_cast<int64_t>(run->first_gradients.size()), model->NumParameters());
  EXPECT_EQ(run->first_activations.num_tokens, c.batch.total_tokens());
  EXPECT_FALSE(RunReferenceTraining(testing::TinyConfig(), testing::TinyAdamW(), c.batch,
                                    testing::kDataSeed, 0)
                   .ok());
}

// Per rank: step 0 of DistributedTrainStep, then CompareFirstStep as computed, with one
// gradient value perturbed, and with one output value perturbed.
struct RankChecks {
  core::Status status;
  FirstStepCheck exact, bad_gradient, bad_output;
};

TEST(CompareFirstStep, TwoFakeRanksPassAndPerturbedValuesFail) {
  const testing::TrainCase c = testing::MixedCase();
  const models::SmallDitConfig cfg = testing::TinyConfig();
  auto ref = RunReferenceTraining(cfg, testing::TinyAdamW(), c.batch, testing::kDataSeed, 1);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  std::vector<RankChecks> out(2);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    RankChecks& rc = out[world.rank()];
    auto run = [&]() -> core::Status {
      ASSIGN_OR_RETURN(models::SmallDit model, models::SmallDit::Create(cfg));
      ASSIGN_OR_RETURN(models::AdamW opt,
                       models::AdamW::Create(model.NumParameters(), testing::TinyAdamW()));
      ASSIGN_OR_RETURN(auto engine, AttentionEngine::Create(c.plan, c.batch, cfg.num_heads,
                                                            cfg.head_dim(), &world));
      EngineAttentionBackend backend(engine.get(), static_cast<int>(cfg.num_layers));
      models::SmallDitActivations acts;
      ASSIGN_OR_RETURN(double loss, DistributedTrainStep(model, opt, backend, world, c.batch,
                                                         testing::kDataSeed, 0, &acts));
      (void)loss;
      std::vector<float> grads(model.Gradients().begin(), model.Gradients().end());
      ASSIGN_OR_RETURN(rc.exact,
                       CompareFirstStep(*ref, model.ParameterTensors(), grads, acts, *engine));
      // A relative change of 1e-3 of the largest value of the last tensor.
      const models::ParameterTensor& t = model.ParameterTensors().back();
      float* g = grads.data() + t.offset;
      int64_t arg = 0;
      for (int64_t i = 1; i < t.size(); ++i)
        if (std::fabs(g[i]) > std::fabs(g[arg])) arg = i;
      g[arg] *= 1.001f;
      ASSIGN_OR_RETURN(rc.bad_gradient,
                       CompareFirstStep(*ref, model.ParameterTensors(), grads, acts, *engine));
      grads.assign(model.Gradients().begin(), model.Gradients().end());
      acts.output[0] += 1e-3f;
      ASSIGN_OR_RETURN(rc.bad_output,
                       CompareFirstStep(*ref, model.ParameterTensors(), grads, acts, *engine));
      return core::Status::Ok();
    };
    rc.status = run();
  });
  const std::string last_tensor = [&] {
    auto m = models::SmallDit::Create(cfg);
    return m.ok() ? m->ParameterTensors().back().name : std::string();
  }();
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(out[r].status.ok()) << out[r].status.ToString();
    const RankChecks& rc = out[r];
    EXPECT_LE(rc.exact.gradient.max_rel, 1e-5);
    EXPECT_LE(rc.exact.output.max_rel, 1e-5);
    EXPECT_LE(rc.exact.model_output.max_rel, 1e-5);
    EXPECT_LE(rc.exact.attention_output.max_rel, 1e-5);
    EXPECT_TRUE(std::isfinite(rc.exact.output.max_abs + rc.exact.gradient.max_abs));
    EXPECT_GT(rc.bad_gradient.gradient.max_rel, 1e-5);
    EXPECT_EQ(rc.bad_gradient.worst_gradient_tensor, last_tensor);
    EXPECT_LE(rc.bad_gradient.output.max_rel, 1e-5);
    EXPECT_GT(rc.bad_output.output.max_rel, 1e-5);
    EXPECT_LE(rc.bad_output.gradient.max_rel, 1e-5);
    std::printf("rank %d: gradient max abs %.3g rel %.3g (%s), output max abs %.3g rel %.3g\n", r,
                rc.exact.gradient.max_abs, rc.exact.gradient.max_rel,
                rc.exact.worst_gradient_tensor.c_str(), rc.exact.output.max_abs,
                rc.exact.output.max_rel);
  }
}

TEST(CompareFirstStep, RejectsMismatchedGradientSize) {
  ReferenceTraining ref;
  ref.first_gradients.assign(4, 1.0f);
  const testing::TrainCase c = testing::MixedCase();
  std::vector<core::Status> status(2);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    auto engine = AttentionEngine::Create(c.plan, c.batch, 2, 16, &world);
    if (!engine.ok()) {
      status[world.rank()] = engine.status();
      return;
    }
    const std::vector<float> grads(3, 1.0f);
    status[world.rank()] =
        CompareFirstStep(ref, {}, grads, models::SmallDitActivations{}, **engine).status();
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(status[r].code(), core::StatusCode::kInvalidArgument) << status[r].ToString();
}

}  // namespace
}  // namespace tessera::zellige::engine
