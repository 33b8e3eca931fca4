#include "models/flow_matching.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "models/models_test_util.h"

namespace tessera::models {
namespace {

TEST(FlowMatchingTest, BatchIsRegenerableAndConsistent) {
  const std::vector<int64_t> ids = {3, 10, 7}, lengths = {5, 2, 4};
  auto a = MakeFlowMatchingBatch(42, 4, ids, lengths, 9);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->cu_seqlens, (std::vector<int64_t>{0, 5, 7, 11}));
  ASSERT_EQ(a->x_t.size(), 44u);
  // Sequence 10 alone reproduces its slice of the packed batch.
  auto one = MakeFlowMatchingBatch(42, 4, std::vector<int64_t>{10}, std::vector<int64_t>{2}, 9);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->timesteps[0], a->timesteps[1]);
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(one->x_t[j], a->x_t[20 + j]);
    EXPECT_EQ(one->target[j], a->target[20 + j]);
  }
  // x_t = (1 - t) x0 + t e with v = e - x0, so x0 = x_t - t v and e = x_t + (1 - t) v.
  std::vector<float> x0(5 * 4);
  SyntheticLatents(42, 3, 5, 4, x0.data());
  const float t = a->timesteps[0];
  EXPECT_GE(t, 0.0f);
  EXPECT_LT(t, 1.0f);
  for (int j = 0; j < 20; ++j) EXPECT_NEAR(a->x_t[j] - t * a->target[j], x0[j], 1e-5);
  // Another step draws other noise and time for the same clean data.
  auto b = MakeFlowMatchingBatch(42, 4, ids, lengths, 10);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->timesteps[0], b->timesteps[0]);
  EXPECT_EQ(MakeFlowMatchingBatch(42, 4, ids, std::vector<int64_t>{5, 0, 4}, 0).status().code(),
            core::StatusCode::kInvalidArgument);
}

TEST(FlowMatchingTest, ChunksAreRowsOfTheWholeSequence) {
  const std::vector<SequenceChunk> whole = {{4, 9, 0, 9}, {8, 5, 0, 5}};
  const std::vector<SequenceChunk> parts = {{8, 5, 2, 5}, {4, 9, 3, 7}, {4, 9, 0, 3}};
  auto w = MakeFlowMatchingChunks(21, 3, whole, 6);
  auto p = MakeFlowMatchingChunks(21, 3, parts, 6);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->cu_seqlens, (std::vector<int64_t>{0, 3, 7, 10}));
  EXPECT_EQ(p->position_offsets, (std::vector<int64_t>{2, 3, 0}));
  EXPECT_EQ(p->timesteps, (std::vector<float>{w->timesteps[1], w->timesteps[0], w->timesteps[0]}));
  // (chunk row start in p, row start in w, rows)
  const int64_t spans[3][3] = {{0, 9 + 2, 3}, {3, 3, 4}, {7, 0, 3}};
  for (const auto& s : spans) {
    for (int64_t j = 0; j < s[2] * 3; ++j) {
      EXPECT_EQ(p->x_t[s[0] * 3 + j], w->x_t[s[1] * 3 + j]);
      EXPECT_EQ(p->target[s[0] * 3 + j], w->target[s[1] * 3 + j]);
    }
  }
  const std::vector<SequenceChunk> bad = {{1, 4, 2, 2}};
  EXPECT_EQ(MakeFlowMatchingChunks(21, 3, bad, 0).status().code(),
            core::StatusCode::kInvalidArgument);
}

TEST(FlowMatchingTest, LossAndGradient) {
  const std::vector<float> pred = {1.0f, 2.0f, -1.0f, 0.0f}, target = {0.0f, 2.0f, 1.0f, 1.0f};
  std::vector<float> d(4);
  EXPECT_DOUBLE_EQ(FlowMatchingLoss(pred, target, d), (1.0 + 0.0 + 4.0 + 1.0) / 4.0);
  EXPECT_FLOAT_EQ(d[0], 0.5f);
  EXPECT_FLOAT_EQ(d[2], -1.0f);
  // With a global normaliser (e.g. 3 ranks holding 12 elements in all).
  EXPECT_DOUBLE_EQ(FlowMatchingLoss(pred, target, d, 12), 6.0 / 12.0);
  EXPECT_FLOAT_EQ(d[0], 2.0f / 12.0f);
}

TEST(FlowMatchingTest, TrainingIsBitwiseDeterministic) {
  SmallDitConfig c;
  c.in_channels = 4;
  c.hidden = 16;
  c.num_heads = 2;
  c.num_layers = 1;
  c.ffn_hidden = 32;
  c.timestep_freq_dim = 8;
  std::vector<std::vector<float>> final_params;
  std::vector<std::vector<double>> all_losses;
  for (int run = 0; run < 2; ++run) {
    auto model = SmallDit::Create(c);
    ASSERT_TRUE(model.ok());
    auto opt = AdamW::Create(model->NumParameters(), AdamWOptions{});
    ASSERT_TRUE(opt.ok());
    LocalAttentionBackend backend;
    SmallDitActivations acts;
    std::vector<double> losses;
    for (int step = 0; step < 3; ++step) {
      auto batch = MakeFlowMatchingBatch(5, c.in_channels, std::vector<int64_t>{step, step + 1},
                                         std::vector<int64_t>{6, 9}, step);
      ASSERT_TRUE(batch.ok());
      auto loss = TrainStep(*model, *opt, *batch, backend, &acts);
      ASSERT_TRUE(loss.ok());
      losses.push_back(*loss);
    }
    all_losses.push_back(losses);
    final_params.emplace_back(model->Parameters().begin(), model->Parameters().end());
  }
  EXPECT_EQ(all_losses[0], all_losses[1]);
  EXPECT_EQ(final_params[0], final_params[1]);
}

// A short deterministic training run on a tiny config: the loss must fall clearly.
TEST(FlowMatchingTest, ShortTrainingRunReducesLoss) {
  SmallDitConfig c;
  c.in_channels = 4;
  c.hidden = 32;
  c.num_heads = 2;
  c.num_layers = 2;
  c.ffn_hidden = 64;
  c.timestep_freq_dim = 32;
  c.init_seed = 3;
  auto model = SmallDit::Create(c);
  ASSERT_TRUE(model.ok());
  AdamWOptions o;
  o.learning_rate = 3e-3f;
  o.weight_decay = 0.01f;
  auto opt = AdamW::Create(model->NumParameters(), o);
  ASSERT_TRUE(opt.ok());
  LocalAttentionBackend backend;
  SmallDitActivations acts;
  // 8 sequences of 16..46 tokens (248 tokens per step) from a pool of 64 sequences.
  const int steps = 50;
  std::vector<double> losses;
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    std::vector<int64_t> ids, lengths;
    for (int i = 0; i < 8; ++i) {
      ids.push_back((step * 8 + i) % 64);
      lengths.push_back(16 + 4 * ((step + i) % 8));
    }
    auto batch = MakeFlowMatchingBatch(17, c.in_channels, ids, lengths, step);
    ASSERT_TRUE(batch.ok());
    auto loss = TrainStep(*model, *opt, *batch, backend, &acts);
    ASSERT_TRUE(loss.ok()) << loss.status().ToString();
    ASSERT_TRUE(std::isfinite(*loss));
    losses.push_back(*loss);
  }
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double first = (losses[0] + losses[1] + losses[2]) / 3.0;
  const double last = (losses[steps - 3] + losses[steps - 2] + losses[steps - 1]) / 3.0;
  std::string curve;
  for (int i = 0; i < steps; i += 5) curve += std::to_string(losses[i]) + " ";
  std::printf("loss curve (every 5th step): %s\nfirst3 %.4f last3 %.4f, %.2f ms/step\n",
              curve.c_str(), first, last, 1e3 * elapsed_s / steps);
  EXPECT_LT(last, 0.7 * first);
  EXPECT_EQ(opt->step(), steps);
}

}  // namespace
}  // namespace tessera::models
