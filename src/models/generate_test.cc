#include "models/generate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "models/kv_cache.h"
#include "models/llama_test_util.h"
#include "models/models_test_util.h"
#include "models/sampler.h"

namespace tessera::models {
namespace {

using testing::ExpectError;
using testing::SeededTokens;
using testing::SmallLlamaConfig;

TEST(Sampler, GreedyTakesTheLargestLowestIndexOnTiesAndSkipsNan) {
  EXPECT_EQ(Greedy(std::vector<float>{0.1f, 3.0f, -2.0f, 2.9f}), 1);
  EXPECT_EQ(Greedy(std::vector<float>{1.0f, 5.0f, 5.0f}), 1);
  EXPECT_EQ(Greedy(std::vector<float>{NAN, -1.0f, NAN, -0.5f}), 3);
  EXPECT_EQ(Greedy(std::vector<float>{NAN, NAN}), 0);
  EXPECT_EQ(Greedy(std::vector<float>{-INFINITY, -INFINITY, INFINITY}), 2);
  core::Rng rng(1);
  EXPECT_EQ(SampleTemperature(std::vector<float>{0.0f, 1.0f, 0.5f}, 0.0, rng), 1);
}

TEST(Sampler, SeededTemperatureIsReproducibleAndFollowsTheSoftmax) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.0f, 2.5f, -1.0f};
  const double temperature = 0.8;
  auto draw = [&](uint64_t seed, int n) {
    core::Rng rng(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) out.push_back(SampleTemperature(logits, temperature, rng));
    return out;
  };
  EXPECT_EQ(draw(5, 64), draw(5, 64));
  EXPECT_NE(draw(5, 64), draw(6, 64));
  // Frequencies within 5 standard deviations of softmax(logits / T).
  const int n = 20000;
  const auto many = draw(7, n);
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < p.size(); ++i) sum += (p[i] = std::exp(logits[i] / temperature));
  for (size_t i = 0; i < p.size(); ++i) {
    const double want = p[i] / sum;
    const double got =
        static_cast<double>(std::count(many.begin(), many.end(), static_cast<int32_t>(i))) / n;
    EXPECT_NEAR(got, want, 5.0 * std::sqrt(want * (1.0 - want) / n)) << i;
  }
  // NaN logits are never drawn; an infinite max is taken as it is.
  core::Rng rng(3);
  for (int i = 0; i < 200; ++i) {
    EXPECT_NE(SampleTemperature(std::vector<float>{NAN, 0.0f, 0.1f}, 1.0, rng), 0);
  }
  EXPECT_EQ(SampleTemperature(std::vector<float>{0.0f, INFINITY, 1.0f}, 1.0, rng), 1);
}

class GenerateTest : public ::testing::Test {
 protected:
  GenerateTest() {
    auto m = LlamaModel::FromSeed(SmallLlamaConfig(2, "gen"), 77, 0.2f);
    CHECK(m.ok());
    model_ = std::make_unique<LlamaModel>(std::move(*m));
  }
  std::vector<int32_t> Run(const LlamaModel& m, std::span<const int32_t> prompt, int64_t n,
                           SamplingOptions opt, const GenerateCallback& cb = nullptr) {
    LocalKvCache cache(m.config());
    auto out = Generate(m, cache, prompt, n, opt, cb);
    CHECK(out.ok()) << out.status().ToString();
    return *out;
  }
  std::unique_ptr<LlamaModel> model_;
  const std::vector<int32_t> prompt_ = SeededTokens(12, 9);
};

TEST_F(GenerateTest, GreedyIsDeterministicAndFollowsTheFullForward) {
  const SamplingOptions greedy{.temperature = 0.0, .seed = 0, .stop_at_eos = false};
  std::vector<std::vector<float>> step_logits;
  const auto a = Run(*model_, prompt_, 24, greedy,
                     [&](int64_t step, int32_t token, std::span<const float> logits) {
                       EXPECT_EQ(step, static_cast<int64_t>(step_logits.size()));
                       EXPECT_EQ(token, Greedy(logits));
                       step_logits.emplace_back(logits.begin(), logits.end());
                     });
  ASSERT_EQ(a.size(), 24u);
  EXPECT_EQ(Run(*model_, prompt_, 24, greedy), a);
  // Teacher-forced: the full forward over prompt + output gives the same logits at each step.
  std::vector<int32_t> seq = prompt_;
  seq.insert(seq.end(), a.begin(), a.end() - 1);
  const std::vector<float> full = testing::FullLogits(*model_, seq);
  const int64_t v = model_->config().vocab;
  for (size_t s = 0; s < a.size(); ++s) {
    const int64_t row = static_cast<int64_t>(prompt_.size() + s) - 1;
    const std::vector<float> want(full.begin() + row * v, full.begin() + (row + 1) * v);
    EXPECT_LE(testing::MaxRelErr(step_logits[s], want), 1e-5) << "step " << s;
  }
}

TEST_F(GenerateTest, SeededTemperatureIsReproducibleAndDiffersAcrossSeeds) {
  SamplingOptions opt{.temperature = 1.0, .seed = 5, .stop_at_eos = false};
  const auto a = Run(*model_, prompt_, 32, opt);
  EXPECT_EQ(Run(*model_, prompt_, 32, opt), a);
  opt.seed = 6;
  const auto b = Run(*model_, prompt_, 32, opt);
  EXPECT_NE(a, b);
  opt.temperature = 0.0;
  EXPECT_NE(Run(*model_, prompt_, 32, opt), a);
}

TEST_F(GenerateTest, EosStopsUnlessIgnored) {
  const SamplingOptions free_run{.temperature = 0.0, .seed = 0, .stop_at_eos = false};
  const auto tokens = Run(*model_, prompt_, 12, free_run);
  // Make the token greedy emits at step k the EOS of an otherwise identical model.
  size_t k = 3;
  while (k < tokens.size() &&
         std::find(tokens.begin(), tokens.begin() + k, tokens[k]) != tokens.begin() + k) {
    ++k;
  }
  ASSERT_LT(k, tokens.size()) << "need a step whose token did not occur before";
  LlamaConfig c = model_->config();
  c.eos_id = tokens[k];
  auto with_eos = LlamaModel::FromTensors(c, model_->ToTensors(), "eos");
  ASSERT_TRUE(with_eos.ok());
  const SamplingOptions stop{.temperature = 0.0, .seed = 0, .stop_at_eos = true};
  const auto stopped = Run(*with_eos, prompt_, 12, stop);
  EXPECT_EQ(stopped, std::vector<int32_t>(tokens.begin(), tokens.begin() + k + 1));
  EXPECT_EQ(stopped.back(), c.eos_id);
  EXPECT_EQ(Run(*with_eos, prompt_, 12, free_run), tokens);
}

TEST_F(GenerateTest, MaxTokensIsTheLengthWithoutEos) {
  const SamplingOptions opt{.temperature = 0.7, .seed = 1, .stop_at_eos = false};
  for (int64_t n : {1, 2, 17}) EXPECT_EQ(Run(*model_, prompt_, n, opt).size(), size_t(n));
  // Shorter runs are prefixes of longer ones (same seed, same draws).
  const auto longer = Run(*model_, prompt_, 17, opt);
  const auto shorter = Run(*model_, prompt_, 5, opt);
  EXPECT_EQ(shorter, std::vector<int32_t>(longer.begin(), longer.begin() + 5));
  // Prompt + tokens may fill the context exactly.
  const auto full = SeededTokens(3, 100);
  EXPECT_EQ(Run(*model_, full, 28, opt).size(), 28u);
}

TEST(Generate, PromptsLongerThanOnePrefillChunk) {
  LlamaConfig c = SmallLlamaConfig(2);
  c.max_context = 2 * kPrefillChunkTokens + 64;
  auto m = LlamaModel::FromSeed(c, 78, 0.2f);
  ASSERT_TRUE(m.ok());
  const auto prompt = SeededTokens(13, kPrefillChunkTokens + 37);
  std::vector<std::vector<float>> step_logits;
  LocalKvCache cache(c);
  auto out = Generate(*m, cache, prompt, 3, {.temperature = 0.0, .seed = 0, .stop_at_eos = false},
                      [&](int64_t, int32_t, std::span<const float> logits) {
                        step_logits.emplace_back(logits.begin(), logits.end());
                      });
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ(cache.num_tokens(), static_cast<int64_t>(prompt.size()) + 2);
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), out->begin(), out->end() - 1);
  const std::vector<float> full = testing::FullLogits(*m, seq);
  for (int64_t s = 0; s < 3; ++s) {
    const int64_t row = static_cast<int64_t>(prompt.size()) + s - 1;
    const std::vector<float> want(full.begin() + row * c.vocab, full.begin() + (row + 1) * c.vocab);
    EXPECT_LE(testing::MaxRelErr(step_logits[s], want), 1e-5) << "step " << s;
  }
}

TEST_F(GenerateTest, BadArgumentsAreRefusedBeforeAnyForward) {
  LocalKvCache cache(model_->config());
  const SamplingOptions opt{};
  ExpectError(Generate(*model_, cache, prompt_, 0, opt).status(),
              core::StatusCode::kInvalidArgument, {"max_tokens", "got 0", ">= 1"});
  ExpectError(Generate(*model_, cache, {}, 4, opt).status(), core::StatusCode::kInvalidArgument,
              {"prompt", "at least 1"});
  ExpectError(Generate(*model_, cache, prompt_, 120, opt).status(),
              core::StatusCode::kInvalidArgument, {"9 tokens", "max_tokens 120", "128"});
  ExpectError(Generate(*model_, cache, prompt_, 4, {.temperature = -1.0}).status(),
              core::StatusCode::kInvalidArgument, {"temperature", "got -1", ">= 0"});
  ExpectError(Generate(*model_, cache, prompt_, 4, {.temperature = NAN}).status(),
              core::StatusCode::kInvalidArgument, {"temperature", "finite"});
  const std::vector<int32_t> bad = {256, 1000};
  ExpectError(Generate(*model_, cache, bad, 4, opt).status(), core::StatusCode::kInvalidArgument,
              {"prompt[1]", "got token 1000", "[0, 259)"});
  EXPECT_EQ(cache.num_tokens(), 0);
}

}  // namespace
}  // namespace tessera::models
