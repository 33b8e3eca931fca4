#include "models/llama.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/output_file.h"
#include "models/kv_cache.h"
#include "models/llama_test_util.h"
#include "models/models_test_util.h"
#include "models/safetensors.h"

namespace tessera::models {
namespace {

using testing::ExpectError;
using testing::FullLogits;
using testing::MaxRelErr;
using testing::SeededTokens;
using testing::SmallLlamaConfig;

// Switches that make the reference wrong on purpose, to show the comparison can fail.
struct RefVariant {
  bool interleaved_rope = false;  // pairs (2i, 2i+1) instead of (i, i + D/2)
  bool kv_head_modulo = false;    // query head h -> KV head h % Hkv instead of h / (H / Hkv)
};

using Mat = std::vector<double>;

// y (rows, out) = x (rows, in) W^T, W (out, in) in fp32.
Mat RefLinear(const Mat& x, int64_t rows, int64_t in, const std::vector<float>& w, int64_t out) {
  Mat y(rows * out, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = 0.0;
      for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * static_cast<double>(w[o * in + i]);
      y[r * out + o] = s;
    }
  }
  return y;
}

Mat RefRmsNorm(const Mat& x, int64_t rows, int64_t width, const std::vector<float>& w, double eps) {
  Mat y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0.0;
    for (int64_t i = 0; i < width; ++i) ss += x[r * width + i] * x[r * width + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(width) + eps);
    for (int64_t i = 0; i < width; ++i) y[r * width + i] = w[i] * x[r * width + i] * inv;
  }
  return y;
}

// Rotates x (T, heads, D) in place; token t is at position t.
void RefRope(Mat& x, int64_t tokens, int64_t heads, int64_t dim, const std::vector<double>& inv,
             bool interleaved) {
  const int64_t half = dim / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      double* v = x.data() + (t * heads + h) * dim;
      for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(t) * inv[i];
        const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
        const double x1 = v[a], x2 = v[b];
        v[a] = x1 * std::cos(angle) - x2 * std::sin(angle);
        v[b] = x2 * std::cos(angle) + x1 * std::sin(angle);
      }
    }
  }
}

// A plain double-precision Llama forward over the whole sequence: logits (T, V).
Mat ReferenceForward(const LlamaModel& model, const std::vector<int32_t>& tokens,
                     RefVariant variant = {}) {
  const LlamaConfig& c = model.config();
  const LlamaWeights& w = model.weights();
  const int64_t t = static_cast<int64_t>(tokens.size()), d = c.hidden, dim = c.head_dim;
  const int64_t h = c.num_heads, hkv = c.num_kv_heads, f = c.ffn_hidden;
  std::vector<double> inv(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    inv[i] = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
  }
  if (c.rope_scaling) inv = c.RopeInvFreq();  // its formula is checked in llama_config_test

  Mat x(t * d);
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = 0; j < d; ++j) x[i * d + j] = w.embed[tokens[i] * d + j];
  }
  for (const LlamaLayerWeights& lw : w.layers) {
    const Mat a = RefRmsNorm(x, t, d, lw.attn_norm, c.rms_eps);
    Mat q = RefLinear(a, t, d, lw.wq, h * dim);
    Mat k = RefLinear(a, t, d, lw.wk, hkv * dim);
    const Mat v = RefLinear(a, t, d, lw.wv, hkv * dim);
    RefRope(q, t, h, dim, inv, variant.interleaved_rope);
    RefRope(k, t, hkv, dim, inv, variant.interleaved_rope);
    Mat o(t * h * dim, 0.0);
    for (int64_t i = 0; i < t; ++i) {
      for (int64_t head = 0; head < h; ++head) {
        const int64_t g = variant.kv_head_modulo ? head % hkv : head / (h / hkv);
        const double* qi = &q[(i * h + head) * dim];
        std::vector<double> p(i + 1);
        double max = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) {  // causal: keys 0..i
          const double* kj = &k[(j * hkv + g) * dim];
          double s = 0.0;
          for (int64_t e = 0; e < dim; ++e) s += qi[e] * kj[e];
          p[j] = s / std::sqrt(static_cast<double>(dim));
          max = std::max(max, p[j]);
        }
        double sum = 0.0;
        for (double& pj : p) sum += (pj = std::exp(pj - max));
        double* oi = &o[(i * h + head) * dim];
        for (int64_t j = 0; j <= i; ++j) {
          for (int64_t e = 0; e < dim; ++e) oi[e] += p[j] / sum * v[(j * hkv + g) * dim + e];
        }
      }
    }
    const Mat attn_out = RefLinear(o, t, h * dim, lw.wo, d);
    for (int64_t i = 0; i < t * d; ++i) x[i] += attn_out[i];
    const Mat b = RefRmsNorm(x, t, d, lw.ffn_norm, c.rms_eps);
    const Mat gate = RefLinear(b, t, d, lw.w_gate, f);
    const Mat up = RefLinear(b, t, d, lw.w_up, f);
    Mat act(t * f);
    for (int64_t i = 0; i < t * f; ++i) act[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
    const Mat down = RefLinear(act, t, f, lw.w_down, d);
    for (int64_t i = 0; i < t * d; ++i) x[i] += down[i];
  }
  const Mat xn = RefRmsNorm(x, t, d, w.final_norm, c.rms_eps);
  return RefLinear(xn, t, d, c.tie_embeddings ? w.embed : w.lm_head, c.vocab);
}

LlamaModel Seeded(const LlamaConfig& c, uint64_t seed, float init_std = 0.02f) {
  auto m = LlamaModel::FromSeed(c, seed, init_std);
  CHECK(m.ok()) << m.status().ToString();
  return std::move(*m);
}

TEST(LlamaForward, MatchesThePlainReferenceOnTinyPresets) {
  for (const char* name : {"tiny-mha", "tiny-gqa"}) {
    SCOPED_TRACE(name);
    auto c = LlamaPreset(name);
    ASSERT_TRUE(c.ok());
    const LlamaModel m = Seeded(*c, 11);
    const auto tokens = SeededTokens(3, 12);
    const std::vector<float> got = FullLogits(m, tokens);
    const Mat want = ReferenceForward(m, tokens);
    const double err = MaxRelErr(got, want);
    EXPECT_LE(err, 1e-5);
    std::printf("[ info ] %s: max |LlamaModel - reference| / max |reference| = %.2e\n", name, err);
  }
}

TEST(LlamaForward, MatchesTheReferenceOnSmallConfigsWithSharpAttention) {
  // A larger init makes attention far from uniform, so RoPE and head mapping matter.
  for (int64_t kv : {4, 2, 1}) {
    for (bool tied : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "kv heads " << kv << " tied " << tied);
      LlamaConfig c = SmallLlamaConfig(kv);
      c.tie_embeddings = tied;
      const LlamaModel m = Seeded(c, 5 + kv, 0.15f);
      const auto tokens = SeededTokens(kv, 40);
      EXPECT_LE(MaxRelErr(FullLogits(m, tokens), ReferenceForward(m, tokens)), 1e-5);
    }
  }
}

TEST(LlamaForward, MatchesTheReferenceWithLlama3RopeScaling) {
  LlamaConfig c = SmallLlamaConfig(2);
  c.rope_theta = 500000.0;
  c.rope_scaling = LlamaRopeScaling{.factor = 8.0,
                                    .low_freq_factor = 1.0,
                                    .high_freq_factor = 4.0,
                                    .original_max_position_embeddings = 64};
  const LlamaModel m = Seeded(c, 21, 0.15f);
  const auto tokens = SeededTokens(9, 30);
  EXPECT_LE(MaxRelErr(FullLogits(m, tokens), ReferenceForward(m, tokens)), 1e-5);
}

TEST(LlamaForward, TheReferenceComparisonCatchesWrongRopeAndHeadMapping) {
  const LlamaModel m = Seeded(SmallLlamaConfig(2), 8, 0.15f);
  const auto tokens = SeededTokens(4, 30);
  const std::vector<float> got = FullLogits(m, tokens);
  EXPECT_GT(MaxRelErr(got, ReferenceForward(m, tokens, {.interleaved_rope = true})), 1e-3);
  EXPECT_GT(MaxRelErr(got, ReferenceForward(m, tokens, {.kv_head_modulo = true})), 1e-3);
}

// Row `row` of a (T, V) logits matrix.
std::vector<float> Row(const std::vector<float>& logits, int64_t row, int64_t vocab) {
  return {logits.begin() + row * vocab, logits.begin() + (row + 1) * vocab};
}

TEST(LlamaForward, IncrementalDecodeWithTheCacheEqualsAFullForward) {
  for (int64_t kv : {4, 2}) {
    SCOPED_TRACE(kv);
    const LlamaModel m = Seeded(SmallLlamaConfig(kv), 31, 0.15f);
    const int64_t vocab = m.config().vocab;
    const auto tokens = SeededTokens(kv + 100, 33);
    const std::vector<float> full = FullLogits(m, tokens);
    // Chunks of 7, 1, 5, 1, 1, ... : prefill, then mixed.
    LocalKvCache cache(m.config());
    int64_t pos = 0;
    const std::vector<int64_t> chunks = {7, 1, 5, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 7};
    for (int64_t n : chunks) {
      ASSERT_LE(pos + n, static_cast<int64_t>(tokens.size()));
      std::vector<float> logits(n * vocab);
      ASSERT_TRUE(
          m.Forward(std::span(tokens).subspan(pos, n), pos, cache, logits.data(), false).ok());
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_LE(MaxRelErr(Row(logits, i, vocab), Row(full, pos + i, vocab)), 1e-5)
            << "position " << pos + i;
      }
      pos += n;
      EXPECT_EQ(cache.num_tokens(), pos);
    }
    ASSERT_EQ(pos, static_cast<int64_t>(tokens.size()));
    // last_only writes only the last row.
    LocalKvCache cache2(m.config());
    std::vector<float> last(vocab);
    ASSERT_TRUE(m.Forward(tokens, 0, cache2, last.data(), /*last_only=*/true).ok());
    EXPECT_LE(MaxRelErr(last, Row(full, pos - 1, vocab)), 1e-6);
  }
}

TEST(LlamaForward, CacheCapacityTruncateAndReset) {
  const LlamaModel m = Seeded(SmallLlamaConfig(2), 32, 0.15f);
  const int64_t vocab = m.config().vocab;
  const auto tokens = SeededTokens(77, 20);
  const std::vector<float> full = FullLogits(m, tokens);
  LocalKvCache cache(m.config(), /*capacity_tokens=*/12);
  std::vector<float> logits(20 * vocab);
  ASSERT_TRUE(m.Forward(std::span(tokens).first(10), 0, cache, logits.data(), false).ok());
  // 10 + 3 > 12: refused naming the capacity; the stored positions are unchanged.
  ExpectError(m.Forward(std::span(tokens).subspan(10, 3), 10, cache, logits.data(), false),
              core::StatusCode::kInfeasible, {"capacity is 12"});
  EXPECT_EQ(cache.num_tokens(), 10);
  // Truncate to 6 and run positions 6..11 again: the same logits as the full forward.
  ASSERT_TRUE(cache.Truncate(6).ok());
  ExpectError(cache.Truncate(7), core::StatusCode::kInvalidArgument, {"got 7", "[0, 6]"});
  ASSERT_TRUE(m.Forward(std::span(tokens).subspan(6, 6), 6, cache, logits.data(), false).ok());
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_LE(MaxRelErr(Row(logits, i, vocab), Row(full, 6 + i, vocab)), 1e-5) << i;
  }
  EXPECT_EQ(cache.num_tokens(), 12);
  cache.Reset();
  EXPECT_EQ(cache.num_tokens(), 0);
  ASSERT_TRUE(m.Forward(std::span(tokens).first(12), 0, cache, logits.data(), false).ok());
  EXPECT_LE(MaxRelErr(Row(logits, 11, vocab), Row(full, 11, vocab)), 1e-5);
}

TEST(LlamaForward, BadInputsAreRefused) {
  const LlamaModel m = Seeded(SmallLlamaConfig(2, "small-x"), 1);
  std::vector<float> logits(259 * 200);
  LocalKvCache cache(m.config());
  ExpectError(m.Forward({}, 0, cache, logits.data(), false), core::StatusCode::kInvalidArgument,
              {"tokens", "at least 1"});
  const std::vector<int32_t> bad = {256, 3, 259};
  ExpectError(m.Forward(bad, 0, cache, logits.data(), false), core::StatusCode::kInvalidArgument,
              {"tokens[2]", "got 259", "[0, 259)", "small-x"});
  const std::vector<int32_t> neg = {-4};
  ExpectError(m.Forward(neg, 0, cache, logits.data(), false), core::StatusCode::kInvalidArgument,
              {"tokens[0]", "got -4"});
  const std::vector<int32_t> ok = {1, 2, 3};
  ExpectError(m.Forward(ok, 126, cache, logits.data(), false), core::StatusCode::kInvalidArgument,
              {"[126, 129)", "max_context 128"});
  ExpectError(m.Forward(ok, -1, cache, logits.data(), false), core::StatusCode::kInvalidArgument,
              {"positions", "-1"});
  // The cache holds 0 positions: a call at pos0 5 is the cache's error, returned as it is.
  const core::Status s = m.Forward(ok, 5, cache, logits.data(), false);
  EXPECT_EQ(s.code(), core::StatusCode::kFailedPrecondition) << s.ToString();
  // A sequence of exactly max_context tokens runs.
  const auto longest = SeededTokens(2, 128);
  ASSERT_TRUE(m.Forward(longest, 0, cache, logits.data(), true).ok());
}

TEST(LlamaModel, SafetensorsDirectoryRoundTrip) {
  const LlamaModel m = Seeded(SmallLlamaConfig(2, "round-trip"), 41, 0.1f);
  const std::string dir = testing::LlamaScratchDir("f32");
  ASSERT_TRUE(m.Save(dir, TensorDtype::kF32).ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/config.json"));
  auto back = LlamaModel::Load(dir);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->config().name, "round-trip");
  EXPECT_EQ(back->config().num_kv_heads, 2);
  EXPECT_EQ(back->Fingerprint(), m.Fingerprint());
  const auto tokens = SeededTokens(5, 20);
  EXPECT_EQ(FullLogits(*back, tokens), FullLogits(m, tokens));
  // Open takes a directory too (the seed is unused then).
  auto opened = LlamaModel::Open(dir, 999);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->Fingerprint(), m.Fingerprint());
}

TEST(LlamaModel, HalfPrecisionFilesLoadAsTheirRoundedWeights) {
  const LlamaModel m = Seeded(SmallLlamaConfig(2), 42, 0.1f);
  const auto tokens = SeededTokens(6, 16);
  const std::vector<float> exact = FullLogits(m, tokens);
  for (TensorDtype dtype : {TensorDtype::kBF16, TensorDtype::kF16}) {
    SCOPED_TRACE(TensorDtypeName(dtype));
    const std::string dir = testing::LlamaScratchDir(TensorDtypeName(dtype));
    ASSERT_TRUE(m.Save(dir, dtype).ok());
    auto back = LlamaModel::Load(dir);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    // Equal to the fp32 model with every weight rounded to the 16-bit format.
    TensorMap rounded = m.ToTensors();
    for (auto& [name, t] : rounded) {
      for (float& x : t.data) {
        x = dtype == TensorDtype::kBF16 ? Bf16ToFloat(FloatToBf16(x)) : F16ToFloat(FloatToF16(x));
      }
    }
    auto want = LlamaModel::FromTensors(m.config(), std::move(rounded), "rounded");
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(back->Fingerprint(), want->Fingerprint());
    EXPECT_NE(back->Fingerprint(), m.Fingerprint());
    EXPECT_EQ(FullLogits(*back, tokens), FullLogits(*want, tokens));
    // And close to the fp32 logits (bf16 keeps 8 significant bits, f16 11).
    EXPECT_LE(MaxRelErr(FullLogits(*back, tokens), exact),
              dtype == TensorDtype::kBF16 ? 3e-2 : 3e-3);
  }
}

TEST(LlamaModel, ShardedDirectoryLoads) {
  const LlamaModel m = Seeded(SmallLlamaConfig(1), 43);
  const std::string dir = testing::LlamaScratchDir("sharded");
  ASSERT_TRUE(core::WriteFileAtomically(dir + "/config.json", m.config().ToHfConfigJson()).ok());
  TensorMap all = m.ToTensors(), a, b;
  core::Json index = {{"metadata", core::Json::object()}, {"weight_map", core::Json::object()}};
  int i = 0;
  for (auto& [name, t] : all) {
    const bool first = (i++ % 2) == 0;
    (first ? a : b)[name] = std::move(t);
    index["weight_map"][name] =
        first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  ASSERT_TRUE(
      WriteSafetensors(dir + "/model-00001-of-00002.safetensors", a, TensorDtype::kF32).ok());
  ASSERT_TRUE(
      WriteSafetensors(dir + "/model-00002-of-00002.safetensors", b, TensorDtype::kF32).ok());
  ASSERT_TRUE(core::WriteFileAtomically(dir + "/model.safetensors.index.json", index.dump(2)).ok());
  auto back = LlamaModel::Load(dir);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Fingerprint(), m.Fingerprint());

  // A weight_map entry that leaves the directory is refused.
  index["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors";
  ASSERT_TRUE(core::WriteFileAtomically(dir + "/model.safetensors.index.json", index.dump(2)).ok());
  ExpectError(LlamaModel::Load(dir).status(), core::StatusCode::kInvalidArgument,
              {"weight_map.model.norm.weight", "../elsewhere.safetensors", "file name"});
}

// A directory holding the config of `m` and `tensors` as model.safetensors.
std::string WriteDir(const std::string& tag, const LlamaModel& m, const TensorMap& tensors) {
  const std::string dir = testing::LlamaScratchDir(tag);
  CHECK(core::WriteFileAtomically(dir + "/config.json", m.config().ToHfConfigJson()).ok());
  CHECK(WriteSafetensors(dir + "/model.safetensors", tensors, TensorDtype::kF32).ok());
  return dir;
}

TEST(LlamaModel, BadDirectoriesAreRefusedNamingTensorValueAndAllowed) {
  const LlamaModel m = Seeded(SmallLlamaConfig(2), 44);
  {
    TensorMap t = m.ToTensors();
    t.erase("model.layers.1.mlp.up_proj.weight");
    const std::string dir = WriteDir("missing", m, t);
    ExpectError(LlamaModel::Load(dir).status(), core::StatusCode::kInvalidArgument,
                {dir + "/model.safetensors", "'model.layers.1.mlp.up_proj.weight'", "missing",
                 "expected shape [96, 64]"});
  }
  {
    TensorMap t = m.ToTensors();
    t["model.layers.0.self_attn.k_proj.weight"] = Tensor{{16, 64}, std::vector<float>(16 * 64)};
    const std::string dir = WriteDir("shape", m, t);
    ExpectError(LlamaModel::Load(dir).status(), core::StatusCode::kInvalidArgument,
                {dir + "/model.safetensors", "'model.layers.0.self_attn.k_proj.weight'",
                 "got [16, 64]", "expected [32, 64]"});
  }
  {
    // A 4-byte integer dtype in place of F32 (same byte size, so only the dtype is wrong).
    auto bytes = EncodeSafetensors(m.ToTensors(), TensorDtype::kF32);
    ASSERT_TRUE(bytes.ok());
    const size_t name_at = bytes->find("\"model.norm.weight\"");
    ASSERT_NE(name_at, std::string::npos);
    const size_t dtype_at = bytes->find("\"F32\"", name_at);
    ASSERT_NE(dtype_at, std::string::npos);
    bytes->replace(dtype_at, 5, "\"I32\"");
    const std::string dir = WriteDir("dtype", m, m.ToTensors());
    ASSERT_TRUE(core::WriteFileAtomically(dir + "/model.safetensors", *bytes).ok());
    ExpectError(
        LlamaModel::Load(dir).status(), core::StatusCode::kInvalidArgument,
        {dir + "/model.safetensors", "'model.norm.weight'", "got 'I32'", "F32, BF16 or F16"});
  }
  {
    // Extra tensors (e.g. rotary buffers) are ignored; lm_head is ignored when tied.
    TensorMap t = m.ToTensors();
    t["model.layers.0.self_attn.rotary_emb.inv_freq"] = Tensor{{8}, std::vector<float>(8, 1.0f)};
    const std::string dir = WriteDir("extra", m, t);
    auto back = LlamaModel::Load(dir);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->Fingerprint(), m.Fingerprint());
  }
  {
    const std::string dir = testing::LlamaScratchDir("no-weights");
    ASSERT_TRUE(core::WriteFileAtomically(dir + "/config.json", m.config().ToHfConfigJson()).ok());
    ExpectError(LlamaModel::Load(dir).status(), core::StatusCode::kNotFound,
                {"model.safetensors", "model.safetensors.index.json"});
  }
  {
    const std::string dir = testing::LlamaScratchDir("no-config");
    ExpectError(LlamaModel::Load(dir).status(), core::StatusCode::kNotFound, {"config.json"});
    ExpectError(LlamaModel::Load(dir + "/nope").status(), core::StatusCode::kNotFound,
                {"not a directory", "config.json"});
  }
  ExpectError(LlamaModel::Open("no-such-preset-or-dir", 1).status(), core::StatusCode::kNotFound,
              {"no-such-preset-or-dir", "tiny-mha", "model directory"});
}

TEST(LlamaModel, FromTensorsNamesTheSource) {
  const LlamaModel m = Seeded(SmallLlamaConfig(2), 45);
  TensorMap t = m.ToTensors();
  t.erase("model.norm.weight");
  ExpectError(LlamaModel::FromTensors(m.config(), std::move(t), "my-source").status(),
              core::StatusCode::kInvalidArgument,
              {"my-source", "'model.norm.weight'", "missing", "[64]"});
}

TEST(LlamaModel, FromTensorsRefusesDataThatDoesNotFillTheShape) {
  // Found by this test: FromTensors used to take such a tensor, and Forward then read past it.
  const LlamaModel m = Seeded(SmallLlamaConfig(2), 46);
  TensorMap t = m.ToTensors();
  t["model.layers.0.mlp.gate_proj.weight"].data.resize(10);
  ExpectError(
      LlamaModel::FromTensors(m.config(), std::move(t), "short").status(),
      core::StatusCode::kInvalidArgument,
      {"short", "'model.layers.0.mlp.gate_proj.weight'", "got 10 values", "[96, 64]", "6144"});
}

TEST(LlamaModel, TiedModelsSaveNoHeadAndNamelessConfigsTakeTheDirectoryName) {
  LlamaConfig c = SmallLlamaConfig(2, "");
  c.tie_embeddings = true;
  const LlamaModel m = Seeded(c, 47);
  EXPECT_EQ(m.ToTensors().count("lm_head.weight"), 0u);
  const std::string dir = testing::LlamaScratchDir("tied") + "/my-model";
  ASSERT_TRUE(m.Save(dir, TensorDtype::kF32).ok());
  for (const std::string& path : {dir, dir + "/"}) {
    auto back = LlamaModel::Load(path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->config().name, "my-model") << path;
    EXPECT_TRUE(back->config().tie_embeddings);
    EXPECT_EQ(back->Fingerprint(), m.Fingerprint());
  }
}

TEST(LlamaModel, FingerprintFollowsTheWeights) {
  const LlamaConfig c = SmallLlamaConfig(2);
  const LlamaModel a = Seeded(c, 1), same = Seeded(c, 1), other = Seeded(c, 2);
  EXPECT_EQ(a.Fingerprint().size(), 16u);
  EXPECT_EQ(a.Fingerprint().find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a.Fingerprint(), same.Fingerprint());
  EXPECT_NE(a.Fingerprint(), other.Fingerprint());
  // The name is not hashed; one weight's lowest bit is.
  LlamaConfig renamed = c;
  renamed.name = "another-name";
  EXPECT_EQ(Seeded(renamed, 1).Fingerprint(), a.Fingerprint());
  TensorMap t = a.ToTensors();
  float& x = t["model.layers.1.mlp.down_proj.weight"].data[17];
  x = std::nextafter(x, INFINITY);
  auto flipped = LlamaModel::FromTensors(c, std::move(t), "flipped");
  ASSERT_TRUE(flipped.ok());
  EXPECT_NE(flipped->Fingerprint(), a.Fingerprint());
  // The shape fields that change the computation are hashed.
  LlamaConfig theta = c;
  theta.rope_theta = 20000.0;
  auto retheta = LlamaModel::FromTensors(theta, a.ToTensors(), "theta");
  ASSERT_TRUE(retheta.ok());
  EXPECT_NE(retheta->Fingerprint(), a.Fingerprint());
}

TEST(LlamaModel, SeedsAreDeterministicAndNormsStartAtOne) {
  const LlamaConfig c = SmallLlamaConfig(4);
  const LlamaModel a = Seeded(c, 9), b = Seeded(c, 9);
  EXPECT_EQ(a.weights().embed, b.weights().embed);
  EXPECT_EQ(a.weights().layers[1].w_down, b.weights().layers[1].w_down);
  for (float x : a.weights().final_norm) EXPECT_EQ(x, 1.0f);
  for (float x : a.weights().layers[0].attn_norm) EXPECT_EQ(x, 1.0f);
  double ss = 0.0;
  for (float x : a.weights().embed) ss += static_cast<double>(x) * x;
  const double std = std::sqrt(ss / static_cast<double>(a.weights().embed.size()));
  EXPECT_NEAR(std, 0.02, 0.002);
  EXPECT_EQ(LlamaLayerTensorName(3, "self_attn.q_proj.weight"),
            "model.layers.3.self_attn.q_proj.weight");
  LlamaConfig bad = c;
  bad.num_kv_heads = 3;
  ExpectError(LlamaModel::FromSeed(bad, 1).status(), core::StatusCode::kInvalidArgument,
              {"num_kv_heads", "got 3"});
}

}  // namespace
}  // namespace tessera::models
