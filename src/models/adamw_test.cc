#include "models/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tessera::models {
namespace {

TEST(AdamWTest, FirstStepMatchesHandComputedValues) {
  AdamWOptions o;
  o.learning_rate = 0.1f;
  o.beta1 = 0.9f;
  o.beta2 = 0.999f;
  o.eps = 1e-8f;
  o.weight_decay = 0.01f;
  auto opt = AdamW::Create(3, o);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  const std::vector<float> g = {0.5f, -0.25f, 0.0f};
  ASSERT_TRUE(opt->Step(p, g).ok());
  // Step 1: m_hat = g, v_hat = g^2, so the Adam update is lr * sign(g) (0 for g = 0);
  // decay first multiplies p by (1 - lr * wd) = 0.999.
  EXPECT_NEAR(p[0], 1.0 * 0.999 - 0.1, 1e-6);
  EXPECT_NEAR(p[1], -2.0 * 0.999 + 0.1, 1e-6);
  EXPECT_NEAR(p[2], 0.5 * 0.999, 1e-6);
  EXPECT_EQ(opt->step(), 1);
}

TEST(AdamWTest, SecondStepUsesBiasCorrectedMoments) {
  AdamWOptions o;
  o.learning_rate = 0.01f;
  o.beta1 = 0.9f;
  o.beta2 = 0.99f;
  o.eps = 1e-6f;
  o.weight_decay = 0.1f;
  auto opt = AdamW::Create(1, o);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {2.0f};
  const float g1 = 1.0f, g2 = -3.0f;
  ASSERT_TRUE(opt->Step(p, std::vector<float>{g1}).ok());
  ASSERT_TRUE(opt->Step(p, std::vector<float>{g2}).ok());
  // By hand in double.
  double pp = 2.0, m = 0.0, v = 0.0;
  const double gs[2] = {g1, g2};
  for (int n = 1; n <= 2; ++n) {
    pp *= 1.0 - 0.01 * 0.1;
    m = 0.9 * m + 0.1 * gs[n - 1];
    v = 0.99 * v + 0.01 * gs[n - 1] * gs[n - 1];
    const double mh = m / (1.0 - std::pow(0.9, n));
    const double vh = v / (1.0 - std::pow(0.99, n));
    pp -= 0.01 * mh / (std::sqrt(vh) + 1e-6);
  }
  // Step 2 by hand: m = 0.09 - 0.3 = -0.21, m_hat = -0.21 / 0.19; v = 0.0099 + 0.09 = 0.0999,
  // v_hat = 0.0999 / 0.0199.
  EXPECT_NEAR(m, -0.21, 1e-12);
  EXPECT_NEAR(p[0], pp, 1e-6);
  EXPECT_EQ(opt->step(), 2);
  EXPECT_EQ(opt->StateBytes(), 8);
}

TEST(AdamWTest, DecayMaskSkipsMaskedElements) {
  AdamWOptions o;
  o.learning_rate = 0.1f;
  o.weight_decay = 0.5f;
  auto opt = AdamW::Create(2, o);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1.0f, 1.0f};
  const std::vector<float> g = {0.0f, 0.0f};
  const std::vector<uint8_t> mask = {1, 0};
  ASSERT_TRUE(opt->Step(p, g, mask).ok());
  EXPECT_NEAR(p[0], 0.95, 1e-7);  // 1 * (1 - 0.1 * 0.5)
  EXPECT_EQ(p[1], 1.0f);
  const std::vector<uint8_t> short_mask = {1};
  EXPECT_EQ(opt->Step(p, g, short_mask).code(), core::StatusCode::kInvalidArgument);
}

TEST(AdamWTest, RejectsBadOptionsAndSizes) {
  AdamWOptions o;
  o.beta1 = 1.0f;
  EXPECT_EQ(AdamW::Create(2, o).status().code(), core::StatusCode::kInvalidArgument);
  o = {};
  o.eps = 0.0f;
  EXPECT_EQ(AdamW::Create(2, o).status().code(), core::StatusCode::kInvalidArgument);
  o = {};
  o.learning_rate = -1.0f;
  EXPECT_EQ(AdamW::Create(2, o).status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(AdamW::Create(-1, AdamWOptions{}).status().code(), core::StatusCode::kInvalidArgument);
  auto opt = AdamW::Create(2, AdamWOptions{});
  ASSERT_TRUE(opt.ok());
  std::vector<float> p(3), g(3);
  EXPECT_EQ(opt->Step(p, g).code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(opt->step(), 0);
}

}  // namespace
}  // namespace tessera::models
