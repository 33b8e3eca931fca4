#include "kernelflume/engine_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "kernelflume/engine_profile.h"

namespace tessera::kernelflume {
namespace {

EngineProfile Hand() {
  EngineProfile p;
  p.base_s = 1;
  p.per_request_s = 0.5;
  p.per_prefill_token_s = 0.1;
  return p;
}

EngineSimRequest Req(double t, int64_t prompt, int64_t max_tokens) {
  return {t, prompt, max_tokens, prompt + max_tokens};
}

TEST(EngineSimTest, OneRequestHandWorked) {
  // Iteration 1: prefill 10 tokens (1.0 s), token 1 at 1.0, forward of 1 (1.5 s) to 2.5;
  // iteration 2: token 2 at 2.5, forward to 4.0; iteration 3: token 3 at 4.0, it leaves.
  auto r = SimulateEngine({Req(0, 10, 3)}, {16, 512, 1000}, Hand());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->token_s[0], (std::vector<double>{1.0, 2.5, 4.0}));
  EXPECT_EQ(r->iterations, 3);
}

TEST(EngineSimTest, PrefillIsChunkedByTheStepBudgetAndStallsTheBatch) {
  // A runs alone: token at 0.1 (its 1-token prefill), forward 1.5 s to 1.6. B arrives at 1.2
  // with 20 prompt tokens and a budget of 8 per iteration: admitted at 1.6, it takes three
  // iterations to prefill (0.8, 0.8, 0.4 s before A's token), then has its token with A's.
  auto r = SimulateEngine({Req(0, 1, 6), Req(1.2, 20, 1)}, {16, 8, 1000}, Hand());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<double> want_a = {0.1, 2.4, 4.7, 6.6, 8.1, 9.6};
  ASSERT_EQ(r->token_s[0].size(), want_a.size());
  for (size_t i = 0; i < want_a.size(); ++i) EXPECT_NEAR(r->token_s[0][i], want_a[i], 1e-12);
  ASSERT_EQ(r->token_s[1].size(), 1u);
  EXPECT_NEAR(r->token_s[1][0], 6.6, 1e-12);
}

TEST(EngineSimTest, AdmissionWaitsForReservationsAndBatchRoom) {
  // Capacity 30: A (20) runs, B (20) waits until A leaves. max_active 1 alike.
  for (const EngineSimOptions& o : {EngineSimOptions{16, 512, 30}, EngineSimOptions{1, 512, 100}}) {
    auto r = SimulateEngine({Req(0, 10, 10), Req(0, 10, 10)}, o, Hand());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->token_s[0].size(), 10u);
    EXPECT_EQ(r->token_s[1].size(), 10u);
    EXPECT_GT(r->token_s[1].front(), r->token_s[0].back());
  }
  // With room for both they decode together: their tokens coincide.
  auto both = SimulateEngine({Req(0, 10, 10), Req(0, 10, 10)}, {16, 512, 100}, Hand());
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->token_s[0], both->token_s[1]);
}

TEST(EngineSimTest, RefusesBadInputByName) {
  EXPECT_FALSE(SimulateEngine({Req(0, 10, 3)}, {0, 512, 100}, Hand()).ok());
  EXPECT_FALSE(SimulateEngine({Req(0, 0, 3)}, {16, 512, 100}, Hand()).ok());
  EXPECT_FALSE(SimulateEngine({Req(1, 5, 3), Req(0, 5, 3)}, {16, 512, 100}, Hand()).ok());
  auto too_big = SimulateEngine({Req(0, 90, 20)}, {16, 512, 100}, Hand());
  EXPECT_NE(too_big.status().message().find("reserve_tokens"), std::string::npos);
}

// The fit recovers a known profile from iterations it generated (with 2% noise), and drops a
// term that would come out negative.
TEST(EngineProfileTest, FitRecoversKnownCoefficients) {
  EngineProfile truth;
  truth.base_s = 2e-3;
  truth.per_request_s = 3e-4;
  truth.per_kv_token_s = 2e-7;
  truth.per_prefill_token_s = 5e-5;
  truth.per_prefill_pair_s = 1e-8;
  core::Rng rng(3);
  std::vector<EngineIteration> its;
  for (int i = 0; i < 400; ++i) {
    EngineIteration it;
    it.decode_batch = 1 + static_cast<int64_t>(rng.Below(16));
    it.decode_kv_tokens = it.decode_batch * (100 + static_cast<int64_t>(rng.Below(2000)));
    if (i % 3 == 0) {
      it.prefill_tokens = 1 + static_cast<int64_t>(rng.Below(512));
      it.prefill_pairs = it.prefill_tokens * (rng.Below(3000) + (it.prefill_tokens + 1) / 2.0);
    }
    it.duration_s = truth.IterationSeconds(it) * (1 + 0.02 * (rng.Uniform() - 0.5));
    its.push_back(it);
  }
  auto fit = FitEngineProfile(its);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_NEAR(fit->base_s, truth.base_s, 0.05 * truth.base_s);
  EXPECT_NEAR(fit->per_request_s, truth.per_request_s, 0.05 * truth.per_request_s);
  EXPECT_NEAR(fit->per_kv_token_s, truth.per_kv_token_s, 0.1 * truth.per_kv_token_s);
  EXPECT_NEAR(fit->per_prefill_token_s, truth.per_prefill_token_s, 0.1 * truth.per_prefill_token_s);
  EXPECT_LT(fit->fit_mape_percent, 1.0);
  EXPECT_EQ(fit->iterations, 400);
  // Durations that fall with the KV: its coefficient would be negative; it is dropped.
  for (EngineIteration& it : its) {
    it.duration_s = 1e-3 + 1e-4 * it.decode_batch - 1e-9 * it.decode_kv_tokens;
    it.prefill_tokens = 0;
    it.prefill_pairs = 0;
  }
  auto dropped = FitEngineProfile(its);
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(dropped->per_kv_token_s, 0);
  EXPECT_EQ(dropped->per_prefill_token_s, 0);
  EXPECT_GT(dropped->per_request_s, 0);
  EXPECT_FALSE(FitEngineProfile(std::vector<EngineIteration>(5)).ok());
}

TEST(EngineProfileTest, JsonRoundTripsAndBadFieldsAreNamed) {
  EngineProfile p = Hand();
  p.source = "test";
  p.iterations = 12;
  auto back = EngineProfileFromJson(ToJson(p), "p.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->base_s, 1);
  EXPECT_EQ(back->per_prefill_token_s, 0.1);
  EXPECT_EQ(back->source, "test");
  core::Json j = ToJson(p);
  j["per_kv_token_s"] = -1;
  EXPECT_NE(EngineProfileFromJson(j, "p.json").status().message().find("per_kv_token_s"),
            std::string::npos);
  j = ToJson(p);
  j["kind"] = "other";
  EXPECT_NE(EngineProfileFromJson(j, "p.json").status().message().find("kind"), std::string::npos);
}

}  // namespace
}  // namespace tessera::kernelflume
