#include "models/text_encoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "core/fnv64.h"
#include "core/rng.h"
#include "kernels/attention.h"
#include "models/ops.h"

namespace tessera::models {
namespace {

namespace ops = ops;

core::Status CheckRange(const char* field, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    return core::InvalidArgument(
        fmt::format("TextEncoderConfig.{}: got {}, must be in [{}, {}]", field, value, lo, hi));
  }
  return core::Status::Ok();
}

void FillNormal(core::Rng rng, double std_dev, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(std_dev * rng.Normal());
}

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

core::Status ValidateTextEncoderConfig(const TextEncoderConfig& c) {
  RETURN_IF_ERROR(CheckRange("vocab", c.vocab, 2, int64_t{1} << 20));
  RETURN_IF_ERROR(CheckRange("tokens", c.tokens, 1, 4096));
  RETURN_IF_ERROR(CheckRange("hidden", c.hidden, 1, int64_t{1} << 16));
  RETURN_IF_ERROR(CheckRange("ffn_hidden", c.ffn_hidden, 1, int64_t{1} << 16));
  RETURN_IF_ERROR(CheckRange("num_layers", c.num_layers, 1, 64));
  RETURN_IF_ERROR(CheckRange("num_heads", c.num_heads, 1, c.hidden));
  if (c.hidden % c.num_heads != 0) {
    return core::InvalidArgument(fmt::format(
        "TextEncoderConfig.num_heads: got {}, must divide hidden = {}", c.num_heads, c.hidden));
  }
  if (!(c.layer_norm_eps > 0.0f) || !std::isfinite(c.layer_norm_eps)) {
    return core::InvalidArgument(fmt::format(
        "TextEncoderConfig.layer_norm_eps: got {}, must be positive and finite", c.layer_norm_eps));
  }
  return core::Status::Ok();
}

int64_t Tokenize(std::string_view prompt, const TextEncoderConfig& config, std::span<int32_t> ids) {
  CHECK(static_cast<int64_t>(ids.size()) == config.tokens) << "ids size " << ids.size();
  const uint64_t buckets = static_cast<uint64_t>(config.vocab - 1);
  int64_t count = 0;
  size_t i = 0;
  while (i < prompt.size() && count < config.tokens) {
    if (!IsWordChar(prompt[i])) {
      ++i;
      continue;
    }
    core::Fnv64 hash;
    for (; i < prompt.size() && IsWordChar(prompt[i]); ++i) {
      hash.Byte(static_cast<uint8_t>(Lower(prompt[i])));
    }
    ids[count++] = static_cast<int32_t>(1 + hash.value() % buckets);
  }
  for (int64_t t = count; t < config.tokens; ++t) ids[t] = 0;
  return count;
}

TextEncoder::TextEncoder(const TextEncoderConfig& config) : config_(config) {}

core::StatusOr<TextEncoder> TextEncoder::Create(const TextEncoderConfig& config, uint64_t seed,
                                                runtime::DeviceAllocator& allocator) {
  RETURN_IF_ERROR(ValidateTextEncoderConfig(config));
  TextEncoder enc(config);
  const int64_t hd = config.hidden, f = config.ffn_hidden;
  LayerOffsets& o = enc.off_;
  int64_t at = 0;
  auto take = [&at](int64_t n) {
    const int64_t here = at;
    at += n;
    return here;
  };
  o.w_qkv = take(hd * 3 * hd);
  o.b_qkv = take(3 * hd);
  o.w_o = take(hd * hd);
  o.b_o = take(hd);
  o.w_1 = take(hd * f);
  o.b_1 = take(f);
  o.w_2 = take(f * hd);
  o.b_2 = take(hd);
  o.size = at;

  const core::Rng root = core::Rng(seed).Fork(0x7e47);
  ASSIGN_OR_RETURN(enc.embed_, allocator.AllocateF32(config.vocab * hd, "text.embed",
                                                     runtime::TensorKind::kWeight));
  FillNormal(root.Fork(0), 1.0, enc.embed_.f32(), config.vocab * hd);
  enc.layers_.reserve(config.num_layers);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    ASSIGN_OR_RETURN(runtime::DeviceTensor w,
                     allocator.AllocateF32(o.size, fmt::format("text.layer{}", l),
                                           runtime::TensorKind::kWeight));
    float* p = w.f32();
    std::fill_n(p, o.size, 0.0f);  // biases
    const core::Rng layer_rng = root.Fork(1 + l);
    const double in_std = 1.0 / std::sqrt(static_cast<double>(hd));
    FillNormal(layer_rng.Fork(0), in_std, p + o.w_qkv, hd * 3 * hd);
    FillNormal(layer_rng.Fork(1), in_std, p + o.w_o, hd * hd);
    FillNormal(layer_rng.Fork(2), in_std, p + o.w_1, hd * f);
    FillNormal(layer_rng.Fork(3), 1.0 / std::sqrt(static_cast<double>(f)), p + o.w_2, f * hd);
    enc.layers_.push_back(std::move(w));
  }
  return enc;
}

int64_t TextEncoder::WeightBytes() const {
  int64_t total = runtime::AlignBytes(embed_.bytes());
  for (const runtime::DeviceTensor& w : layers_) total += runtime::AlignBytes(w.bytes());
  return total;
}

core::Status TextEncoder::Encode(runtime::DeviceAllocator& allocator, std::string_view prompt,
                                 const std::string& prefix, const runtime::OpContext& context,
                                 runtime::DeviceTensor* tokens,
                                 runtime::DeviceTensor* pooled) const {
  const int64_t t_n = config_.tokens, hd = config_.hidden, f = config_.ffn_hidden;
  const int64_t heads = config_.num_heads;
  const double t_d = static_cast<double>(t_n), hd_d = static_cast<double>(hd);
  runtime::DeviceTensor h;
  int64_t real = 0;
  {
    runtime::OpScope op(allocator, prefix + ".embed", context);
    ASSIGN_OR_RETURN(runtime::DeviceTensor ids,
                     allocator.Allocate(t_n * 4, prefix + ".ids", runtime::TensorKind::kWorkspace));
    ASSIGN_OR_RETURN(
        h, allocator.AllocateF32(t_n * hd, prefix + ".h", runtime::TensorKind::kActivation));
    std::span<int32_t> id_span(static_cast<int32_t*>(ids.data()), static_cast<size_t>(t_n));
    real = Tokenize(prompt, config_, id_span);
    for (int64_t t = 0; t < t_n; ++t) {
      const float* e = embed_.f32() + static_cast<int64_t>(id_span[t]) * hd;
      float* row = h.f32() + t * hd;
      const float pos = static_cast<float>(t);
      ops::SinusoidalEmbedding(&pos, 1, hd, 10000.0f, row);
      for (int64_t j = 0; j < hd; ++j) row[j] += e[j];
    }
    op.Count(0, 4.0 * t_d * hd_d);
  }

  const std::array<int64_t, 2> cu = {0, t_n};
  kernels::AttentionShape shape;
  shape.num_heads = heads;
  shape.head_dim = hd / heads;
  shape.cu_seqlens_q = cu;
  shape.cu_seqlens_k = cu;
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const std::string name = fmt::format("{}.layer{}", prefix, l);
    runtime::OpScope op(allocator, name, context);
    const float* p = layers_[l].f32();
    auto ws = [&](int64_t count, const char* what) {
      return allocator.AllocateF32(count, fmt::format("{}.{}", name, what),
                                   runtime::TensorKind::kWorkspace);
    };
    ASSIGN_OR_RETURN(runtime::DeviceTensor ln, ws(t_n * hd, "ln"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor rstd, ws(t_n, "rstd"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor q, ws(t_n * hd, "q"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor k, ws(t_n * hd, "k"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor v, ws(t_n * hd, "v"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor attn, ws(t_n * hd, "attn"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor lse, ws(t_n * heads, "lse"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor ffn, ws(t_n * f, "ffn"));
    float* x = h.f32();
    // Attention half.
    ops::LayerNormForward(x, t_n, hd, config_.layer_norm_eps, ln.f32(), rstd.f32());
    float* qkv[3] = {q.f32(), k.f32(), v.f32()};
    for (int64_t i = 0; i < 3; ++i) {
      ops::LinearForward(ln.f32(), t_n, hd, p + off_.w_qkv + i * hd, 3 * hd,
                         p + off_.b_qkv + i * hd, hd, qkv[i], hd);
    }
    RETURN_IF_ERROR(
        kernels::AttentionForward(shape, q.f32(), k.f32(), v.f32(), attn.f32(), lse.f32())
            .WithPrefix(name + " attention"));
    ops::LinearForward(attn.f32(), t_n, hd, p + off_.w_o, hd, p + off_.b_o, hd, ln.f32(), hd);
    for (int64_t i = 0; i < t_n * hd; ++i) x[i] += ln.f32()[i];
    // MLP half.
    ops::LayerNormForward(x, t_n, hd, config_.layer_norm_eps, ln.f32(), rstd.f32());
    ops::LinearForward(ln.f32(), t_n, hd, p + off_.w_1, f, p + off_.b_1, f, ffn.f32(), f);
    ops::GeluForward(ffn.f32(), t_n * f, ffn.f32());
    ops::LinearForward(ffn.f32(), t_n, f, p + off_.w_2, hd, p + off_.b_2, hd, ln.f32(), hd);
    for (int64_t i = 0; i < t_n * hd; ++i) x[i] += ln.f32()[i];
    op.Count(
        2.0 * t_d * hd_d * (4.0 * hd_d + 2.0 * static_cast<double>(f)) + 4.0 * t_d * t_d * hd_d,
        4.0 * static_cast<double>(layers_[l].f32_count()));
  }

  {
    runtime::OpScope op(allocator, prefix + ".final", context);
    ASSIGN_OR_RETURN(
        runtime::DeviceTensor rstd,
        allocator.AllocateF32(t_n, prefix + ".final.rstd", runtime::TensorKind::kWorkspace));
    ASSIGN_OR_RETURN(
        runtime::DeviceTensor out,
        allocator.AllocateF32(t_n * hd, prefix + ".tokens", runtime::TensorKind::kActivation));
    ASSIGN_OR_RETURN(
        runtime::DeviceTensor pool,
        allocator.AllocateF32(hd, prefix + ".pooled", runtime::TensorKind::kActivation));
    ops::LayerNormForward(h.f32(), t_n, hd, config_.layer_norm_eps, out.f32(), rstd.f32());
    h.Reset();
    float* pv = pool.f32();
    std::fill_n(pv, hd, 0.0f);
    for (int64_t t = 0; t < real; ++t) {
      const float* row = out.f32() + t * hd;
      for (int64_t j = 0; j < hd; ++j) pv[j] += row[j];
    }
    if (real > 0) {
      const float inv = 1.0f / static_cast<float>(real);
      for (int64_t j = 0; j < hd; ++j) pv[j] *= inv;
    }
    op.Count(0, 8.0 * t_d * hd_d);
    *tokens = std::move(out);
    *pooled = std::move(pool);
  }
  return core::Status::Ok();
}

}  // namespace tessera::models
