#include "models/llama_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "core/json_util.h"
#include "models/llama.h"
#include "models/llama_test_util.h"

namespace tessera::models {
namespace {

using testing::ExpectError;

// A Llama-3.1-8B style config.json, written for this test.
constexpr const char* kHf8b = R"({
  "architectures": ["LlamaForCausalLM"],
  "model_type": "llama",
  "_name_or_path": "test/llama-8b-like",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "num_attention_heads": 32,
  "num_key_value_heads": 8,
  "num_hidden_layers": 32,
  "vocab_size": 128256,
  "max_position_embeddings": 131072,
  "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "tie_word_embeddings": false,
  "hidden_act": "silu",
  "attention_bias": false,
  "mlp_bias": false,
  "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009],
  "torch_dtype": "bfloat16"
})";

// A minimal config.json; the keys of `extra` (JSON object members, without braces) replace or
// add to it.
std::string SmallHf(const std::string& extra = "") {
  core::Json j = {{"hidden_size", 64},      {"intermediate_size", 96}, {"num_attention_heads", 4},
                  {"num_hidden_layers", 2}, {"vocab_size", 259},       {"bos_token_id", 256},
                  {"eos_token_id", 257}};
  if (!extra.empty()) j.update(core::Json::parse("{" + extra + "}"));
  return j.dump();
}

TEST(LlamaConfig, TinyPresetsHaveTheirShapes) {
  for (const char* name : {"tiny-mha", "tiny-gqa"}) {
    auto c = LlamaPreset(name);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->name, name);
    EXPECT_EQ(c->vocab, 259);
    EXPECT_EQ(c->hidden, 512);
    EXPECT_EQ(c->num_layers, 8);
    EXPECT_EQ(c->num_heads, 8);
    EXPECT_EQ(c->num_kv_heads, std::string(name) == "tiny-mha" ? 8 : 2);
    EXPECT_EQ(c->head_dim, 64);
    EXPECT_EQ(c->ffn_hidden, 1536);
    EXPECT_EQ(c->bos_id, 256);
    EXPECT_EQ(c->eos_id, 257);
    EXPECT_FALSE(c->shape_only);
    EXPECT_FALSE(c->rope_scaling.has_value());
    EXPECT_TRUE(c->Validate().ok());
  }
}

TEST(LlamaConfig, Llama31PresetsMatchThePublishedShapes) {
  auto c8 = LlamaPreset("llama-3.1-8b");
  ASSERT_TRUE(c8.ok());
  EXPECT_TRUE(c8->shape_only);
  EXPECT_EQ(c8->num_layers, 32);
  EXPECT_EQ(c8->hidden, 4096);
  EXPECT_EQ(c8->num_heads, 32);
  EXPECT_EQ(c8->num_kv_heads, 8);
  EXPECT_EQ(c8->head_dim, 128);
  EXPECT_EQ(c8->ffn_hidden, 14336);
  EXPECT_EQ(c8->vocab, 128256);
  EXPECT_EQ(c8->max_context, 131072);
  ASSERT_TRUE(c8->rope_scaling.has_value());
  EXPECT_EQ(c8->rope_scaling->factor, 8.0);
  // Published parameter counts of Llama 3.1 8B and 70B (untied embeddings).
  EXPECT_EQ(c8->ParamCount(), 8030261248);
  // bf16 KV: 2 (K, V) * 32 layers * 8 heads * 128 * 2 bytes.
  EXPECT_EQ(c8->KvBytesPerToken(2), 131072);

  auto c70 = LlamaPreset("llama-3.1-70b");
  ASSERT_TRUE(c70.ok());
  EXPECT_EQ(c70->num_layers, 80);
  EXPECT_EQ(c70->hidden, 8192);
  EXPECT_EQ(c70->num_heads, 64);
  EXPECT_EQ(c70->num_kv_heads, 8);
  EXPECT_EQ(c70->ffn_hidden, 28672);
  EXPECT_EQ(c70->ParamCount(), 70553706496);
  EXPECT_EQ(c70->KvBytesPerToken(2), 327680);
}

TEST(LlamaConfig, PresetNamesAndUnknownPreset) {
  const auto names = LlamaPresetNames();
  ASSERT_EQ(names.size(), 4u);
  for (const auto& n : names) EXPECT_TRUE(LlamaPreset(n).ok()) << n;
  ExpectError(LlamaPreset("llama-9").status(), core::StatusCode::kNotFound,
              {"llama-9", "tiny-mha", "tiny-gqa", "llama-3.1-8b", "llama-3.1-70b"});
}

TEST(LlamaConfig, ShapeOnlyPresetsHaveNoWeights) {
  auto c = LlamaPreset("llama-3.1-70b");
  ASSERT_TRUE(c.ok());
  ExpectError(LlamaModel::FromSeed(*c, 1).status(), core::StatusCode::kInvalidArgument,
              {"llama-3.1-70b", "shape-only", "tiny-mha"});
}

TEST(LlamaConfig, ParamCountOfASmallConfigByHand) {
  const LlamaConfig c = testing::SmallLlamaConfig(2);
  // embed + head 2*259*64; per layer: norms 2*64, q 64*64, k and v 2*(32*64), o 64*64,
  // gate/up/down 3*64*96; final norm 64.
  const int64_t per_layer = 128 + 4096 + 4096 + 4096 + 3 * 6144;
  EXPECT_EQ(c.ParamCount(), 2 * 259 * 64 + 2 * per_layer + 64);
  LlamaConfig tied = c;
  tied.tie_embeddings = true;
  EXPECT_EQ(tied.ParamCount(), c.ParamCount() - 259 * 64);
  EXPECT_EQ(c.KvBytesPerToken(4), 2 * 2 * 2 * 16 * 4);
}

TEST(LlamaConfig, ParsesAHuggingFaceLlama31Config) {
  auto c = LlamaConfig::FromHfConfigJson(kHf8b);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, "test/llama-8b-like");
  EXPECT_EQ(c->hidden, 4096);
  EXPECT_EQ(c->ffn_hidden, 14336);
  EXPECT_EQ(c->num_heads, 32);
  EXPECT_EQ(c->num_kv_heads, 8);  // GQA: 4 query heads per KV head
  EXPECT_EQ(c->num_layers, 32);
  EXPECT_EQ(c->head_dim, 128);  // hidden / heads
  EXPECT_EQ(c->vocab, 128256);
  EXPECT_EQ(c->max_context, 131072);
  EXPECT_EQ(c->rms_eps, 1e-5);
  EXPECT_EQ(c->rope_theta, 500000.0);
  ASSERT_TRUE(c->rope_scaling.has_value());
  EXPECT_EQ(c->rope_scaling->factor, 8.0);
  EXPECT_EQ(c->rope_scaling->low_freq_factor, 1.0);
  EXPECT_EQ(c->rope_scaling->high_freq_factor, 4.0);
  EXPECT_EQ(c->rope_scaling->original_max_position_embeddings, 8192);
  EXPECT_EQ(c->bos_id, 128000);
  EXPECT_EQ(c->eos_id, 128001);  // the first of the list
  EXPECT_FALSE(c->tie_embeddings);
  EXPECT_FALSE(c->shape_only);
  // The same shape as the preset.
  auto preset = LlamaPreset("llama-3.1-8b");
  ASSERT_TRUE(preset.ok());
  EXPECT_EQ(c->ParamCount(), preset->ParamCount());
  EXPECT_EQ(c->RopeInvFreq(), preset->RopeInvFreq());
}

TEST(LlamaConfig, DefaultsOfOptionalKeys) {
  auto c = LlamaConfig::FromHfConfigJson(SmallHf());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_kv_heads, 4);  // absent: multi-head attention
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->rope_theta, 10000.0);
  EXPECT_EQ(c->rms_eps, 1e-6);
  EXPECT_EQ(c->max_context, 2048);
  EXPECT_FALSE(c->rope_scaling.has_value());
  EXPECT_FALSE(c->tie_embeddings);
  EXPECT_EQ(c->name, "");
}

TEST(LlamaConfig, ExplicitGqaHeadDimThetaAndTying) {
  auto c = LlamaConfig::FromHfConfigJson(
      SmallHf(R"("num_key_value_heads": 1, "head_dim": 32, "rope_theta": 123.5,
                 "tie_word_embeddings": true, "rope_scaling": {"rope_type": "default"},
                 "max_position_embeddings": 77, "rms_norm_eps": 1e-6,
                 "some_unknown_key": [1, 2])"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_kv_heads, 1);
  EXPECT_EQ(c->head_dim, 32);  // H * D = 128 != hidden 64 is allowed
  EXPECT_EQ(c->rope_theta, 123.5);
  EXPECT_TRUE(c->tie_embeddings);
  EXPECT_FALSE(c->rope_scaling.has_value());  // "default" is no scaling
  EXPECT_EQ(c->max_context, 77);
  // The old "type" spelling of rope_scaling is read too.
  auto old = LlamaConfig::FromHfConfigJson(SmallHf(
      R"("rope_scaling": {"type": "llama3", "factor": 4, "low_freq_factor": 1,
                          "high_freq_factor": 2, "original_max_position_embeddings": 64})"));
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  ASSERT_TRUE(old->rope_scaling.has_value());
  EXPECT_EQ(old->rope_scaling->factor, 4.0);
  EXPECT_EQ(old->rope_scaling->original_max_position_embeddings, 64);
}

TEST(LlamaConfig, HfJsonRoundTrip) {
  for (const char* name : {"tiny-gqa", "llama-3.1-8b"}) {
    auto c = LlamaPreset(name);
    ASSERT_TRUE(c.ok());
    auto back = LlamaConfig::FromHfConfigJson(c->ToHfConfigJson());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->name, c->name);
    EXPECT_EQ(back->ParamCount(), c->ParamCount());
    EXPECT_EQ(back->num_kv_heads, c->num_kv_heads);
    EXPECT_EQ(back->head_dim, c->head_dim);
    EXPECT_EQ(back->max_context, c->max_context);
    EXPECT_EQ(back->rope_theta, c->rope_theta);
    EXPECT_EQ(back->rms_eps, c->rms_eps);
    EXPECT_EQ(back->bos_id, c->bos_id);
    EXPECT_EQ(back->eos_id, c->eos_id);
    EXPECT_EQ(back->rope_scaling.has_value(), c->rope_scaling.has_value());
    EXPECT_EQ(back->RopeInvFreq(), c->RopeInvFreq());
    EXPECT_FALSE(back->shape_only);
  }
}

TEST(LlamaConfig, RopeInvFreqWithoutScaling) {
  LlamaConfig c = testing::SmallLlamaConfig(2);
  c.rope_theta = 10000.0;
  const auto inv = c.RopeInvFreq();
  ASSERT_EQ(inv.size(), 8u);
  EXPECT_EQ(inv[0], 1.0);
  for (size_t i = 0; i < inv.size(); ++i) {
    EXPECT_NEAR(inv[i], std::pow(10000.0, -2.0 * static_cast<double>(i) / 16.0), 1e-15);
  }
  EXPECT_NEAR(inv[4], 0.01, 1e-15);  // 10000^(-8/16)
}

TEST(LlamaConfig, RopeInvFreqLlama3Scaling) {
  auto c = LlamaPreset("llama-3.1-8b");
  ASSERT_TRUE(c.ok());
  LlamaConfig plain = *c;
  plain.rope_scaling.reset();
  const auto base = plain.RopeInvFreq();
  const auto scaled = c->RopeInvFreq();
  ASSERT_EQ(base.size(), 64u);
  ASSERT_EQ(scaled.size(), 64u);
  // Llama 3.1: factor 8, low 1, high 4, original 8192: wavelengths below 8192 / 4 = 2048 are
  // kept, above 8192 / 1 are divided by 8, and interpolated in between.
  int kept = 0, divided = 0, blended = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const double wavelen = 2.0 * std::numbers::pi / base[i];
    if (wavelen < 2048.0) {
      EXPECT_EQ(scaled[i], base[i]) << i;
      ++kept;
    } else if (wavelen > 8192.0) {
      EXPECT_NEAR(scaled[i], base[i] / 8.0, 1e-12 * base[i]) << i;
      ++divided;
    } else {
      const double s = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      ASSERT_GE(s, 0.0);
      ASSERT_LE(s, 1.0);
      EXPECT_NEAR(scaled[i], (1.0 - s) * base[i] / 8.0 + s * base[i], 1e-12 * base[i]) << i;
      EXPECT_LT(scaled[i], base[i]);
      EXPECT_GT(scaled[i], base[i] / 8.0);
      ++blended;
    }
    if (i > 0) {
      EXPECT_LT(scaled[i], scaled[i - 1]) << "frequencies must keep decreasing";
    }
  }
  // Every class occurs for head_dim 128 and theta 500000.
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
  EXPECT_EQ(kept + divided + blended, 64);
}

struct BadField {
  const char* json;               // spliced into SmallHf
  std::vector<std::string> want;  // field, value, what is allowed
};

TEST(LlamaConfig, BadFieldsAreRefusedNamingFieldValueAndAllowed) {
  const std::vector<BadField> cases = {
      {R"("num_key_value_heads": 3)", {"num_key_value_heads", "got 3", "must divide", "4"}},
      {R"("num_key_value_heads": 0)", {"num_key_value_heads", "got 0", ">= 1"}},
      {R"("hidden_size": 0)", {"hidden_size", "got 0", ">= 1"}},
      {R"("vocab_size": -5)", {"vocab_size", "-5", ">= 1"}},
      {R"("num_attention_heads": 3)", {"num_attention_heads", "got 3", "must divide", "64"}},
      {R"("head_dim": 15)", {"head_dim", "got 15", "even"}},
      {R"("rms_norm_eps": -1e-5)", {"rms_norm_eps", "got", "> 0"}},
      {R"("rope_theta": 0)", {"rope_theta", "got 0", "> 0"}},
      {R"("bos_token_id": 300)", {"bos_token_id", "got 300", "[0, 259)"}},
      {R"("eos_token_id": 259)", {"eos_token_id", "got 259", "[0, 259)"}},
      {R"("eos_token_id": "x")", {"eos_token_id", "\"x\"", "token id"}},
      {R"("hidden_act": "gelu")", {"hidden_act", "gelu", "silu"}},
      {R"("attention_bias": true)", {"attention_bias", "true", "must be false"}},
      {R"("mlp_bias": true)", {"mlp_bias", "true", "must be false"}},
      {R"("tie_word_embeddings": "yes")", {"tie_word_embeddings", "yes", "true or false"}},
      {R"("rope_scaling": 3)", {"rope_scaling", "got 3", "object or null"}},
      {R"("rope_scaling": {"rope_type": "yarn", "factor": 4})",
       {"rope_scaling.rope_type", "yarn", "llama3"}},
      {R"("rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1,
                            "high_freq_factor": 4})",
       {"original_max_position_embeddings"}},
      {R"("rope_scaling": {"rope_type": "llama3", "factor": 0.5, "low_freq_factor": 1,
                            "high_freq_factor": 4, "original_max_position_embeddings": 64})",
       {"rope_scaling.factor", "got 0.5", ">= 1"}},
      {R"("rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 4,
                            "high_freq_factor": 2, "original_max_position_embeddings": 64})",
       {"rope_scaling.high_freq_factor", "got 2", "> low_freq_factor 4"}},
      {R"("max_position_embeddings": 0)", {"max_position_embeddings", "got 0", ">= 1"}},
  };
  for (const BadField& bad : cases) {
    SCOPED_TRACE(bad.json);
    auto c = LlamaConfig::FromHfConfigJson(SmallHf(bad.json), "dir/config.json");
    ExpectError(c.status(), core::StatusCode::kInvalidArgument, bad.want);
    if (!c.ok()) {
      EXPECT_EQ(c.status().message().rfind("dir/config.json", 0), 0u) << c.status().message();
    }
  }
  // A required key missing, and text that is not JSON.
  ExpectError(LlamaConfig::FromHfConfigJson(R"({"hidden_size": 64})").status(),
              core::StatusCode::kInvalidArgument, {"intermediate_size"});
  EXPECT_FALSE(LlamaConfig::FromHfConfigJson("{not json").ok());
  EXPECT_FALSE(LlamaConfig::FromHfConfigJson("[1, 2]").ok());
}

TEST(LlamaConfig, ValidateNamesTheMember) {
  LlamaConfig c = testing::SmallLlamaConfig(2);
  ASSERT_TRUE(c.Validate().ok());
  LlamaConfig bad = c;
  bad.num_kv_heads = 3;
  ExpectError(bad.Validate(), core::StatusCode::kInvalidArgument,
              {"LlamaConfig.num_kv_heads", "got 3", "must divide", "num_heads 4"});
  bad = c;
  bad.head_dim = 7;
  ExpectError(bad.Validate(), core::StatusCode::kInvalidArgument,
              {"LlamaConfig.head_dim", "got 7", "even"});
  bad = c;
  bad.eos_id = -1;
  ExpectError(bad.Validate(), core::StatusCode::kInvalidArgument,
              {"LlamaConfig.eos_id", "got -1", "[0, 259)"});
  bad = c;
  bad.rms_eps = NAN;
  ExpectError(bad.Validate(), core::StatusCode::kInvalidArgument,
              {"LlamaConfig.rms_eps", "finite and > 0"});
  bad = c;
  bad.hidden = int64_t{1} << 21;
  ExpectError(bad.Validate(), core::StatusCode::kInvalidArgument, {"LlamaConfig.hidden", "got"});
}

TEST(LlamaConfig, ConfigFileErrorsNameThePath) {
  const std::string dir = testing::LlamaScratchDir("cfg");
  ExpectError(LlamaConfig::FromHfConfigFile(dir + "/missing.json").status(),
              core::StatusCode::kNotFound, {"missing.json"});
}

}  // namespace
}  // namespace tessera::models
