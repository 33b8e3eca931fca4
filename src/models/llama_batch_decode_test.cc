// LlamaBatchDecode against the plain per-sequence path: each row of a batched step equals
// LlamaModel::Forward of that sequence's token over its own LocalKvCache (within 1e-5 relative,
// same greedy token), on tiny-mha and tiny-gqa, B = 1, 2, 5 sequences at different lengths; and
// the errors a caller sees.
#include "models/llama_batch_decode.h"

#include <gtest/gtest.h>

#include <memory>

#include "core/rng.h"
#include "core/tensor_error.h"
#include "models/kv_cache.h"
#include "models/llama_test_util.h"
#include "models/sampler.h"

namespace tessera::models {
namespace {

using testing::ExpectError;

TEST(LlamaBatchDecode, EachRowEqualsTheSequencesOwnForward) {
  for (const char* name : {"tiny-mha", "tiny-gqa"}) {
    auto config = LlamaPreset(name);
    ASSERT_TRUE(config.ok());
    auto model = LlamaModel::FromSeed(*config, 21);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const int64_t vocab = config->vocab;
    for (int64_t b : {1, 2, 5}) {
      SCOPED_TRACE(std::string(name) + " B=" + std::to_string(b));
      core::Rng rng(100 + b);
      // Two caches per sequence holding the same prefix: one for the reference, one batched.
      std::vector<std::unique_ptr<LocalKvCache>> ref, bat;
      std::vector<int32_t> tokens(b);
      std::vector<int64_t> positions(b);
      std::vector<float> logits(vocab);
      for (int64_t i = 0; i < b; ++i) {
        const int64_t len = 1 + static_cast<int64_t>(rng.Below(12)) + 5 * i;
        const std::vector<int32_t> prefix = testing::SeededTokens(7 * b + i, len);
        ref.push_back(std::make_unique<LocalKvCache>(*config, 64));
        bat.push_back(std::make_unique<LocalKvCache>(*config, 64));
        ASSERT_TRUE(model->Forward(prefix, 0, *ref.back(), logits.data(), true).ok());
        ASSERT_TRUE(model->Forward(prefix, 0, *bat.back(), logits.data(), true).ok());
        tokens[i] = Greedy(logits);
        positions[i] = len;
      }
      std::vector<CoreAttention*> attns;
      for (auto& c : bat) attns.push_back(c.get());
      LlamaBatchDecode decode(*model);
      std::vector<float> batched(b * vocab), want(vocab);
      for (int step = 0; step < 3; ++step) {
        ASSERT_TRUE(decode.Step(tokens, positions, attns, batched.data()).ok());
        for (int64_t i = 0; i < b; ++i) {
          ASSERT_TRUE(
              model->Forward(std::span(&tokens[i], 1), positions[i], *ref[i], want.data(), true)
                  .ok());
          const std::span<const float> row(batched.data() + i * vocab, vocab);
          EXPECT_LE(core::CompareTensors(row, want).max_rel, 1e-5) << "sequence " << i;
          EXPECT_EQ(Greedy(row), Greedy(want)) << "sequence " << i << " step " << step;
          tokens[i] = Greedy(want);
          ++positions[i];
        }
      }
    }
  }
}

TEST(LlamaBatchDecode, BadInputNamesTheField) {
  auto config = LlamaPreset("tiny-gqa");
  ASSERT_TRUE(config.ok());
  auto model = LlamaModel::FromSeed(*config, 3);
  ASSERT_TRUE(model.ok());
  LocalKvCache c0(*config, 8), c1(*config, 8);
  std::vector<CoreAttention*> attns = {&c0, &c1};
  std::vector<int32_t> tokens = {1, 2};
  std::vector<int64_t> positions = {0, 0};
  LlamaBatchDecode decode(*model);
  const auto bad = core::StatusCode::kInvalidArgument;
  ExpectError(decode.Start({}, {}, {}), bad, {"tokens"});
  ExpectError(decode.Start(tokens, std::vector<int64_t>{0}, attns), bad, {"positions", "1", "2"});
  ExpectError(decode.Start(tokens, positions, std::vector<CoreAttention*>{&c0}), bad, {"attns"});
  ExpectError(decode.Start(std::vector<int32_t>{1, 259}, positions, attns), bad,
              {"tokens[1]", "259"});
  ExpectError(decode.Start(std::vector<int32_t>{-1, 2}, positions, attns), bad, {"tokens[0]"});
  ExpectError(decode.Start(tokens, std::vector<int64_t>{0, -2}, attns), bad, {"positions[1]"});
  ExpectError(decode.Start(tokens, std::vector<int64_t>{config->max_context, 0}, attns), bad,
              {"positions[0]", "max_context"});
  ExpectError(decode.Start(tokens, positions, std::vector<CoreAttention*>{&c0, nullptr}), bad,
              {"attns[1]"});
  // Out of order.
  const auto order = core::StatusCode::kFailedPrecondition;
  ExpectError(decode.Dispatch(0), order, {"Start"});
  ASSERT_TRUE(decode.Start(tokens, positions, attns).ok());
  ExpectError(decode.Complete(0), order, {"out of order"});
  ExpectError(decode.Dispatch(1), order, {"out of order"});
  ASSERT_TRUE(decode.Dispatch(0).ok());
  ExpectError(decode.Logits(nullptr), order, {"out of order"});
  ASSERT_TRUE(decode.Complete(0).ok());
}

}  // namespace
}  // namespace tessera::models
