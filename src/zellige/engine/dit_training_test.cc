// DistributedTrainStep and EngineAttentionBackend on 2 in-process fake ranks (the real engine
// over comm::InProcessWorld) against the single-process SmallDit run.
#include "zellige/engine/dit_training.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "comm/in_process_communicator.h"
#include "zellige/engine/dit_training_test_util.h"

namespace tessera::zellige::engine {
namespace {

using testing::TrainResult;

TEST(DitTraining, TwoFakeRanksMatchSingleProcessLossCurve) {
  const testing::TrainCase c = testing::MixedCase();
  ASSERT_TRUE(zellige::ValidatePlan(c.plan, c.batch, testing::TinyConfig().num_heads).ok());
  auto ref = testing::ReferenceRun(c, testing::kSteps);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();

  std::vector<TrainResult> dist(2);
  std::vector<core::Status> status(2);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    auto r = testing::DistributedRun(c, testing::kSteps, world);
    status[world.rank()] = r.status();
    if (r.ok()) dist[world.rank()] = std::move(*r);
  });
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(status[r].ok()) << status[r].ToString();

  // Loss: equal to the single-process curve within 1e-5 relative at every step.
  double worst_loss_rel = 0;
  for (int s = 0; s < testing::kSteps; ++s) {
    for (int r = 0; r < 2; ++r) {
      const double rel = std::fabs(dist[r].losses[s] - ref->losses[s]) / ref->losses[s];
      worst_loss_rel = std::max(worst_loss_rel, rel);
      EXPECT_LE(rel, 1e-5) << "step " << s << " rank " << r;
    }
  }
  // The loss falls.
  EXPECT_LT(ref->losses.back(), 0.9 * ref->losses.front());
  EXPECT_LT(dist[0].losses.back(), 0.9 * dist[0].losses.front());

  // Parameters: identical on both ranks (all-reduced gradients are the same bits), and close
  // to the reference. AdamW normalises each update by sqrt(v), so an element whose gradient
  // is near zero (pure rounding noise) can move by up to ~lr per step in either run, however
  // small the gradient differences are: element-wise, the only sound bound is the largest
  // possible movement, steps * lr (times ~1 for |m_hat / sqrt(v_hat)| <= 1). The meaningful
  // check is norm-wise: the difference must be a small fraction (1%) of the total update
  // ||p_ref - p_init||.
  ASSERT_EQ(dist[0].params.size(), ref->params.size());
  EXPECT_EQ(dist[0].params, dist[1].params);
  auto init = models::SmallDit::Create(testing::TinyConfig());
  ASSERT_TRUE(init.ok());
  double worst_param = 0, diff2 = 0, update2 = 0;
  for (size_t i = 0; i < ref->params.size(); ++i) {
    const double d = dist[0].params[i] - ref->params[i];
    const double u = ref->params[i] - init->Parameters()[i];
    worst_param = std::max(worst_param, std::fabs(d));
    diff2 += d * d;
    update2 += u * u;
  }
  const double lr = testing::TinyAdamW().learning_rate;
  const double norm_rel = std::sqrt(diff2 / update2);
  EXPECT_LE(worst_param, lr * testing::kSteps);
  EXPECT_LE(norm_rel, 1e-2);
  std::printf(
      "max loss rel diff %.3g, param diff: max abs %.3g (bound %.3g), ||diff|| / "
      "||update|| %.3g (bound 1e-2); loss %.5f -> %.5f\n",
      worst_loss_rel, worst_param, lr * testing::kSteps, norm_rel, ref->losses.front(),
      ref->losses.back());
}

TEST(EngineAttentionBackend, RejectsAShapeThatIsNotTheLocalLayout) {
  const testing::TrainCase c = testing::MixedCase();
  std::vector<core::Status> status(2);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    auto engine = AttentionEngine::Create(c.plan, c.batch, 2, 16, &world);
    if (!engine.ok()) {
      status[world.rank()] = engine.status();
      return;
    }
    EngineAttentionBackend backend(engine->get(), 2);
    const int64_t t = (*engine)->local_tokens();
    const int64_t cu[2] = {0, t};  // one segment, but the rank has several placements
    kernels::AttentionShape shape{
        .num_heads = 2, .head_dim = 16, .cu_seqlens_q = cu, .cu_seqlens_k = cu, .scale = {}};
    std::vector<float> buf(static_cast<size_t>(t) * 32), lse(static_cast<size_t>(t) * 2);
    status[world.rank()] =
        backend.Forward(shape, buf.data(), buf.data(), buf.data(), buf.data(), lse.data());
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(status[r].code(), core::StatusCode::kInvalidArgument) << status[r].ToString();
  }
}

}  // namespace
}  // namespace tessera::zellige::engine
