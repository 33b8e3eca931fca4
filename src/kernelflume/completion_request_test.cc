// POST /v1/completions bodies: each field parsed, each bad value refused naming the field.
#include "kernelflume/completion_request.h"

#include <gtest/gtest.h>

#include "models/byte_tokenizer.h"
#include "models/llama_test_util.h"

namespace tessera::kernelflume {
namespace {

models::LlamaConfig ByteConfig() {
  models::LlamaConfig c = models::testing::SmallLlamaConfig(2, "test-req");
  c.max_context = 128;
  return c;
}

TEST(CompletionRequestTest, ParsesTextAndIdsWithDefaults) {
  const models::LlamaConfig c = ByteConfig();
  auto r = ParseCompletionRequest(R"({"prompt": "hi"})", c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->params.prompt, models::ByteTokenizer::Encode("hi"));
  EXPECT_EQ(r->params.max_tokens, 16);
  EXPECT_EQ(r->params.temperature, 0);
  EXPECT_FALSE(r->stream);
  EXPECT_TRUE(r->params.stop_at_eos);
  r = ParseCompletionRequest(
      R"({"prompt": [1, 2, 258], "max_tokens": 5, "temperature": 0.5, "seed": 9,
          "stream": true, "stop_at_eos": false, "model": "test-req"})",
      c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->params.prompt, (std::vector<int32_t>{1, 2, 258}));
  EXPECT_EQ(r->params.max_tokens, 5);
  EXPECT_EQ(r->params.temperature, 0.5);
  EXPECT_EQ(r->params.seed, 9u);
  EXPECT_TRUE(r->stream);
  EXPECT_FALSE(r->params.stop_at_eos);
}

TEST(CompletionRequestTest, EachBadFieldIsNamed) {
  const models::LlamaConfig c = ByteConfig();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "body: not JSON"},
      {R"({"prompt": "a", "prompt": [1]})", "duplicate key"},
      {R"({"prompt": "a", "max_tokens": 1e400})", "body: not JSON"},
      {"[1]", "must be an object"},
      {R"({"max_tokens": 3})", "prompt: missing"},
      {R"({"prompt": ""})", "prompt: empty"},
      {R"({"prompt": []})", "prompt: empty"},
      {R"({"prompt": [1, "a"]})", "prompt[1]"},
      {R"({"prompt": [1, 259]})", "prompt[1]: token 259"},
      {R"({"prompt": 5})", "prompt: got 5"},
      {R"({"prompt": "a", "max_tokens": 0})", "max_tokens: got 0"},
      {R"({"prompt": "a", "max_tokens": -2})", "max_tokens: got -2"},
      {R"({"prompt": "a", "max_tokens": 1.5})", "max_tokens: got 1.5"},
      {R"({"prompt": "a", "max_tokens": 1000})", "max_tokens: got 1000"},
      {R"({"prompt": "a", "temperature": -1})", "temperature: got -1"},
      {R"({"prompt": "a", "temperature": "hot"})", "temperature: got \"hot\""},
      {R"({"prompt": "a", "seed": -3})", "seed: got -3"},
      {R"({"prompt": "a", "stream": "yes"})", "stream: got \"yes\""},
      {R"({"prompt": "a", "max_token": 3})", "unknown key 'max_token'"},
      {R"({"prompt": "a", "model": "gpt-4"})", "model: got \"gpt-4\""},
  };
  for (const auto& [body, want] : cases) {
    auto r = ParseCompletionRequest(body, c);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument) << body;
    EXPECT_NE(r.status().message().find(want), std::string::npos)
        << body << " -> " << r.status().message();
  }
  models::LlamaConfig big = c;
  big.vocab = 1000;
  auto r = ParseCompletionRequest(R"({"prompt": "a"})", big);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("give token ids"), std::string::npos);
}

TEST(CompletionRequestTest, TextOfTokensEscapesBrokenUtf8) {
  const models::LlamaConfig c = ByteConfig();
  EXPECT_EQ(CompletionText(std::vector<int32_t>{'o', 'k'}, c), "ok");
  EXPECT_EQ(CompletionText(std::vector<int32_t>{0xC3}, c), "\\xC3");  // half a character
  models::LlamaConfig big = c;
  big.vocab = 1000;
  EXPECT_EQ(CompletionText(std::vector<int32_t>{1, 2}, big), "");
}

}  // namespace
}  // namespace tessera::kernelflume
