#include "hw/comm_fit.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "core/units.h"

namespace tessera::hw {
namespace {

TEST(CommFitTest, RecoversAlphaBetaFromNoiselessSamples) {
  const AlphaBeta truth{12e-6, 1.0 / (5 * core::kGB)};
  std::vector<CommSample> s;
  for (double b : {4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0})
    s.push_back({b, truth.TimeS(b)});
  auto fit = FitAlphaBeta(s);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_NEAR(fit->alpha_s, truth.alpha_s, 1e-12);
  EXPECT_NEAR(fit->beta_s_per_byte, truth.beta_s_per_byte, 1e-20);
  auto link = ToLink(*fit, "p2p (measured)");
  ASSERT_TRUE(link.ok());
  EXPECT_EQ(link->name, "p2p (measured)");
  EXPECT_NEAR(link->bw_bytes_per_s, 5 * core::kGB, 1e-3);
  EXPECT_NEAR(link->latency_s, 12e-6, 1e-12);
}

// Differential: against the textbook slope cov(x, y) / var(x) on seeded noisy samples.
TEST(CommFitTest, NoisySamplesMatchPlainReference) {
  core::Rng rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<CommSample> s;
    for (int i = 0; i < 6; ++i) {
      const double bytes = 4096.0 * (1 << (2 * i));
      s.push_back({bytes, (20e-6 + bytes / 2e9) * (1 + 0.1 * (rng.Uniform() - 0.5))});
    }
    double mx = 0, my = 0;
    for (const auto& p : s) mx += p.bytes / 6, my += p.time_s / 6;
    double sxx = 0, sxy = 0;
    for (const auto& p : s) {
      sxx += (p.bytes - mx) * (p.bytes - mx);
      sxy += (p.bytes - mx) * (p.time_s - my);
    }
    auto fit = FitAlphaBeta(s);
    ASSERT_TRUE(fit.ok());
    EXPECT_NEAR(fit->beta_s_per_byte, sxy / sxx, 1e-15) << trial;
    EXPECT_NEAR(fit->alpha_s, std::max(0.0, my - sxy / sxx * mx), 1e-12) << trial;
  }
}

TEST(CommFitTest, ClampsNegativeCoefficientsAndRejectsDegenerateInput) {
  // Times fall with size: the slope clamps to 0; a negative intercept clamps to 0.
  auto flat = FitAlphaBeta({{1000, 2e-5}, {2000, 1e-5}});
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->beta_s_per_byte, 0);
  EXPECT_EQ(ToLink(*flat, "x").status().message(),
            "comm fit x: beta_s_per_byte: got 0, must be > 0 and finite (a link has a finite "
            "bandwidth)");
  auto neg = FitAlphaBeta({{1000, 1e-6}, {2000, 3e-6}});  // intercept -1e-6
  ASSERT_TRUE(neg.ok());
  EXPECT_EQ(neg->alpha_s, 0);
  EXPECT_EQ(FitAlphaBeta({{1000, 1e-6}, {1000, 2e-6}}).status().message(),
            "comm fit: got 1 distinct message sizes, must be >= 2");
  EXPECT_FALSE(FitAlphaBeta({}).ok());
  EXPECT_EQ(FitAlphaBeta({{1000, -1}, {2000, 1}}).status().message(),
            "comm fit: samples[0]: got bytes 1000, time_s -1, must be finite and >= 0");
  EXPECT_FALSE(ToLink({-1, 1e-9}, "x").ok());
}

}  // namespace
}  // namespace tessera::hw
