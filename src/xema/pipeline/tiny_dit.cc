#include "xema/pipeline/tiny_dit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "core/rng.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "models/ops.h"

namespace tessera::xema {
namespace {

namespace ops = models::ops;
using kernels::Transpose;

// Softmax of each of `rows` rows of length `cols` in place.
void SoftmaxRows(float* s, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * cols;
    const float mx = *std::max_element(row, row + cols);
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      row[j] = std::exp(row[j] - mx);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < cols; ++j) row[j] *= inv;
  }
}

// Unfused attention over B sequences of L tokens, q, k, v, o (B L, H D): for each query chunk
// the scores of every (sequence, head) are materialised in one workspace, softmaxed and
// multiplied by V.
core::Status ChunkedAttention(DeviceAllocator& allocator, const std::string& name, const float* q,
                              const float* k, const float* v, float* o, int64_t batch,
                              int64_t seq_len, int64_t heads, int64_t head_dim, int64_t chunks) {
  const int64_t rows_per_chunk = (seq_len + chunks - 1) / chunks;
  const int64_t ld = heads * head_dim;
  const int64_t slice = rows_per_chunk * seq_len;
  ASSIGN_OR_RETURN(
      DeviceTensor scores,
      allocator.AllocateF32(batch * heads * slice, name + ".scores", TensorKind::kWorkspace));
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (int64_t r0 = 0; r0 < seq_len; r0 += rows_per_chunk) {
    const int64_t rows = std::min(rows_per_chunk, seq_len - r0);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        float* s = scores.f32() + (b * heads + h) * slice;
        const float* qh = q + (b * seq_len + r0) * ld + h * head_dim;
        const float* kh = k + b * seq_len * ld + h * head_dim;
        kernels::GemmUnchecked(Transpose::kNo, Transpose::kYes, rows, seq_len, head_dim, scale, qh,
                               ld, kh, ld, 0.0f, s, seq_len);
      }
    }
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        float* s = scores.f32() + (b * heads + h) * slice;
        SoftmaxRows(s, rows, seq_len);
        const float* vh = v + b * seq_len * ld + h * head_dim;
        float* oh = o + (b * seq_len + r0) * ld + h * head_dim;
        kernels::GemmUnchecked(Transpose::kNo, Transpose::kNo, rows, head_dim, seq_len, 1.0f, s,
                               seq_len, vh, ld, 0.0f, oh, ld);
      }
    }
  }
  scores.Reset();
  return core::Status::Ok();
}

}  // namespace

int64_t FfnChunkRows(int64_t rows, int64_t chunks) {
  const int64_t m = kFfnChunkRowMultiple;
  int64_t r = ((rows + chunks - 1) / chunks + m - 1) / m * m;
  while (r < rows && rows % r == 1) r += m;
  return std::min(r, rows);
}

core::StatusOr<TinyDit> TinyDit::Create(const models::SmallDitConfig& config, int64_t text_hidden,
                                        uint64_t text_seed, DeviceAllocator& allocator) {
  if (text_hidden < 1 || text_hidden > (int64_t{1} << 16)) {
    return core::InvalidArgument(
        fmt::format("TinyDit text_hidden: got {}, must be in [1, 65536]", text_hidden));
  }
  ASSIGN_OR_RETURN(models::SmallDit reference, models::SmallDit::Create(config));
  TinyDit dit;
  dit.config_ = config;
  dit.text_hidden_ = text_hidden;
  Offsets& o = dit.off_;
  static_cast<models::SmallDitOffsets&>(o) = reference.ParameterOffsets();

  const std::span<const float> params = reference.Parameters();
  ASSIGN_OR_RETURN(dit.params_, allocator.AllocateF32(static_cast<int64_t>(params.size()),
                                                      "dit.params", TensorKind::kWeight));
  std::copy(params.begin(), params.end(), dit.params_.f32());

  const int64_t hd = config.hidden, th = text_hidden;
  o.w_txt = 0;
  o.b_txt = th * hd;
  o.w_pool = o.b_txt + hd;
  o.b_pool = o.w_pool + th * hd;
  const int64_t text_floats = o.b_pool + hd;
  ASSIGN_OR_RETURN(dit.text_, allocator.AllocateF32(text_floats, "dit.text", TensorKind::kWeight));
  float* t = dit.text_.f32();
  std::fill_n(t, text_floats, 0.0f);
  const core::Rng root(text_seed);
  const double std_dev = 1.0 / std::sqrt(static_cast<double>(th));
  for (int which = 0; which < 2; ++which) {
    core::Rng rng = root.Fork(which);
    float* w = t + (which == 0 ? o.w_txt : o.w_pool);
    for (int64_t i = 0; i < th * hd; ++i) w[i] = static_cast<float>(std_dev * rng.Normal());
  }
  return dit;
}

core::Status TinyDit::ProjectText(DeviceAllocator& allocator, std::span<const float* const> text,
                                  std::span<const float* const> pooled, int64_t text_tokens,
                                  DeviceTensor* text_ctx, DeviceTensor* pool_ctx,
                                  double* flops) const {
  const int64_t batch = static_cast<int64_t>(text.size());
  if (batch < 1 || batch > kMaxDitBatch || pooled.size() != text.size() || text_tokens < 1) {
    return core::InvalidArgument(fmt::format(
        "TinyDit::ProjectText: got {} prompts, {} pooled vectors and {} tokens; need 1 to {} "
        "prompts, one pooled vector each and >= 1 token",
        batch, pooled.size(), text_tokens, kMaxDitBatch));
  }
  const int64_t hd = config_.hidden, th = text_hidden_;
  ASSIGN_OR_RETURN(DeviceTensor ctx, allocator.AllocateF32(batch * text_tokens * hd, "dit.text_ctx",
                                                           TensorKind::kActivation));
  ASSIGN_OR_RETURN(DeviceTensor pool,
                   allocator.AllocateF32(batch * hd, "dit.pool_ctx", TensorKind::kActivation));
  const float* w = text_.f32();
  for (int64_t b = 0; b < batch; ++b) {
    ops::LinearForward(text[b], text_tokens, th, w + off_.w_txt, hd, w + off_.b_txt, hd,
                       ctx.f32() + b * text_tokens * hd, hd);
    ops::LinearForward(pooled[b], 1, th, w + off_.w_pool, hd, w + off_.b_pool, hd,
                       pool.f32() + b * hd, hd);
  }
  *flops += 2.0 * static_cast<double>(batch * (text_tokens + 1) * th * hd);
  *text_ctx = std::move(ctx);
  *pool_ctx = std::move(pool);
  return core::Status::Ok();
}

core::StatusOr<DeviceTensor> TinyDit::Forward(DeviceAllocator& allocator, const Input& in,
                                              const DitExecution& execution,
                                              const OpContext& context) const {
  const int64_t hd = config_.hidden, f = config_.ffn_hidden, cin = config_.in_channels;
  const int64_t ft = config_.timestep_freq_dim, heads = config_.num_heads;
  const int64_t b_n = in.batch, n = in.image_tokens;
  const bool has_text = in.text_ctx != nullptr && !in.text_ctx->empty();
  const bool has_pool = in.pool_ctx != nullptr && !in.pool_ctx->empty();
  const int64_t txt = has_text ? in.text_tokens : 0;
  if (in.latent == nullptr || n < 1 || b_n < 1 || b_n > kMaxDitBatch) {
    return core::InvalidArgument(fmt::format(
        "TinyDit::Forward: got batch {} and {} image tokens{}; need batch in [1, {}], >= 1 token "
        "and a latent",
        b_n, n, in.latent == nullptr ? " without a latent" : "", kMaxDitBatch));
  }
  if (has_text && (txt < 1 || in.text_ctx->f32_count() != b_n * txt * hd)) {
    return core::InvalidArgument(
        fmt::format("TinyDit::Forward: text context has {} floats, need batch * text_tokens * "
                    "hidden = {} * {} * {}",
                    in.text_ctx->f32_count(), b_n, txt, hd));
  }
  if (has_pool && in.pool_ctx->f32_count() != b_n * hd) {
    return core::InvalidArgument(
        fmt::format("TinyDit::Forward: pooled context has {} floats, need batch * hidden = {}",
                    in.pool_ctx->f32_count(), b_n * hd));
  }
  if (execution.attention_chunks < 1 || execution.ffn_chunks < 1) {
    return core::InvalidArgument(fmt::format(
        "TinyDit::Forward: got {} attention chunks and {} FFN chunks, both must be >= 1",
        execution.attention_chunks, execution.ffn_chunks));
  }
  const int64_t l_n = txt + n, rows = b_n * l_n;
  // FFN rows per chunk (the reused hidden workspace's height).
  const int64_t ffn_rows = FfnChunkRows(rows, execution.ffn_chunks);
  const double rows_d = static_cast<double>(rows), hd_d = static_cast<double>(hd);
  const float* p = params_.f32();
  std::array<int64_t, kMaxDitBatch + 1> cu_all{}, cu_img_all{};
  for (int64_t b = 0; b <= b_n; ++b) {
    cu_all[b] = b * l_n;
    cu_img_all[b] = b * n;
  }
  const std::span<const int64_t> cu(cu_all.data(), static_cast<size_t>(b_n + 1));
  const std::span<const int64_t> cu_img(cu_img_all.data(), static_cast<size_t>(b_n + 1));

  DeviceTensor h, cond;
  {
    OpScope op(allocator, "dit.embed", context);
    ASSIGN_OR_RETURN(DeviceTensor temb,
                     allocator.AllocateF32(ft + 3 * hd, "dit.embed.temb", TensorKind::kWorkspace));
    ASSIGN_OR_RETURN(cond, allocator.AllocateF32(b_n * hd, "dit.cond", TensorKind::kActivation));
    ASSIGN_OR_RETURN(h, allocator.AllocateF32(rows * hd, "dit.h", TensorKind::kActivation));
    // Timestep MLP (one row, shared by the sequences), plus each sequence's pooled text.
    float* freq = temb.f32();
    float* t_pre = freq + ft;
    float* t_act = t_pre + hd;
    float* pos_row = t_act + hd;
    const float t_scaled = 1000.0f * in.t;
    ops::SinusoidalEmbedding(&t_scaled, 1, ft, 10000.0f, freq);
    ops::LinearForward(freq, 1, ft, p + off_.w_t1, hd, p + off_.b_t1, hd, t_pre, hd);
    ops::SiluForward(t_pre, hd, t_act);
    ops::LinearForward(t_act, 1, hd, p + off_.w_t2, hd, p + off_.b_t2, hd, t_pre, hd);
    for (int64_t b = 0; b < b_n; ++b) {
      float* c = cond.f32() + b * hd;
      std::copy(t_pre, t_pre + hd, c);
      if (has_pool) {
        const float* pool = in.pool_ctx->f32() + b * hd;
        for (int64_t j = 0; j < hd; ++j) c[j] += pool[j];
      }
    }
    ops::SiluForward(cond.f32(), b_n * hd, cond.f32());
    // Joint sequences [text ; image]: the image rows of sequence 0 are embedded, then copied.
    float* img0 = h.f32() + txt * hd;
    ops::LinearForward(in.latent, n, cin, p + off_.w_in, hd, p + off_.b_in, hd, img0, hd);
    for (int64_t t = 0; t < n; ++t) {
      const float pos = static_cast<float>(t);
      ops::SinusoidalEmbedding(&pos, 1, hd, 10000.0f, pos_row);
      float* row = img0 + t * hd;
      for (int64_t j = 0; j < hd; ++j) row[j] += pos_row[j];
    }
    for (int64_t b = 0; b < b_n; ++b) {
      float* seq = h.f32() + b * l_n * hd;
      if (b > 0) std::copy(img0, img0 + n * hd, seq + txt * hd);
      if (has_text) {
        const float* ctx = in.text_ctx->f32() + b * txt * hd;
        std::copy(ctx, ctx + txt * hd, seq);
      }
    }
    if (in.release_context) {
      if (in.text_ctx != nullptr) in.text_ctx->Reset();
      if (in.pool_ctx != nullptr) in.pool_ctx->Reset();
    }
    if (in.after_embed) RETURN_IF_ERROR(in.after_embed());
    op.Count(2.0 * static_cast<double>(n * cin * hd + ft * hd + hd * hd),
             4.0 * static_cast<double>(rows * hd));
  }

  kernels::AttentionShape shape;
  shape.num_heads = heads;
  shape.head_dim = config_.head_dim();
  shape.cu_seqlens_q = cu;
  shape.cu_seqlens_k = cu;
  const int64_t ld_mod = 6 * hd;
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const std::string name = fmt::format("dit.block{}", l);
    OpScope op(allocator, name, context);
    const BlockOffsets& bo = off_.blocks[l];
    auto ws = [&](int64_t count, const char* what) {
      return allocator.AllocateF32(count, fmt::format("{}.{}", name, what), TensorKind::kWorkspace);
    };
    ASSIGN_OR_RETURN(DeviceTensor mod_t, ws(b_n * ld_mod, "mod"));
    ASSIGN_OR_RETURN(DeviceTensor norm, ws(rows * hd, "norm"));
    ASSIGN_OR_RETURN(DeviceTensor rstd, ws(rows, "rstd"));
    ASSIGN_OR_RETURN(DeviceTensor modx, ws(rows * hd, "modx"));
    ASSIGN_OR_RETURN(DeviceTensor q, ws(rows * hd, "q"));
    ASSIGN_OR_RETURN(DeviceTensor k, ws(rows * hd, "k"));
    ASSIGN_OR_RETURN(DeviceTensor v, ws(rows * hd, "v"));
    ASSIGN_OR_RETURN(DeviceTensor attn, ws(rows * hd, "attn"));
    ASSIGN_OR_RETURN(DeviceTensor ffn, ws(ffn_rows * f, "ffn"));
    const float* mod = mod_t.f32();
    float* x = h.f32();
    ops::LinearForward(cond.f32(), b_n, hd, p + bo.w_mod, ld_mod, p + bo.b_mod, ld_mod, mod_t.f32(),
                       ld_mod);
    // Attention half.
    ops::LayerNormForward(x, rows, hd, config_.layer_norm_eps, norm.f32(), rstd.f32());
    ops::ModulateForward(norm.f32(), cu, hd, mod, mod + hd, ld_mod, modx.f32());
    float* qkv[3] = {q.f32(), k.f32(), v.f32()};
    for (int64_t i = 0; i < 3; ++i) {
      ops::LinearForward(modx.f32(), rows, hd, p + bo.w_qkv + i * hd, 3 * hd, p + bo.b_qkv + i * hd,
                         hd, qkv[i], hd);
    }
    if (execution.attention == AttentionMode::kFused) {
      ASSIGN_OR_RETURN(DeviceTensor lse, ws(rows * heads, "lse"));
      RETURN_IF_ERROR(
          kernels::AttentionForward(shape, q.f32(), k.f32(), v.f32(), attn.f32(), lse.f32())
              .WithPrefix(name + " attention"));
    } else {
      RETURN_IF_ERROR(ChunkedAttention(allocator, name, q.f32(), k.f32(), v.f32(), attn.f32(), b_n,
                                       l_n, heads, config_.head_dim(), execution.attention_chunks));
    }
    ops::LinearForward(attn.f32(), rows, hd, p + bo.w_o, hd, p + bo.b_o, hd, norm.f32(), hd);
    ops::GatedResidualForward(norm.f32(), cu, hd, mod + 2 * hd, ld_mod, x);
    // MLP half.
    ops::LayerNormForward(x, rows, hd, config_.layer_norm_eps, norm.f32(), rstd.f32());
    ops::ModulateForward(norm.f32(), cu, hd, mod + 3 * hd, mod + 4 * hd, ld_mod, modx.f32());
    // FFN over row chunks through the one hidden workspace; its output rows land in `norm`.
    for (int64_t r0 = 0; r0 < rows; r0 += ffn_rows) {
      const int64_t m = std::min(ffn_rows, rows - r0);
      ops::LinearForward(modx.f32() + r0 * hd, m, hd, p + bo.w_ff1, f, p + bo.b_ff1, f, ffn.f32(),
                         f);
      ops::GeluForward(ffn.f32(), m * f, ffn.f32());
      ops::LinearForward(ffn.f32(), m, f, p + bo.w_ff2, hd, p + bo.b_ff2, hd, norm.f32() + r0 * hd,
                         hd);
    }
    ops::GatedResidualForward(norm.f32(), cu, hd, mod + 5 * hd, ld_mod, x);
    op.Count(2.0 * rows_d * hd_d * (4.0 * hd_d + 2.0 * static_cast<double>(f)) +
                 2.0 * static_cast<double>(b_n) * hd_d * static_cast<double>(ld_mod) +
                 4.0 * static_cast<double>(b_n * l_n * l_n) * hd_d,
             4.0 * rows_d * hd_d * 12.0);
  }

  OpScope op(allocator, "dit.final", context);
  ASSIGN_OR_RETURN(DeviceTensor fmod,
                   allocator.AllocateF32(b_n * 2 * hd, "dit.final.mod", TensorKind::kWorkspace));
  ASSIGN_OR_RETURN(DeviceTensor norm,
                   allocator.AllocateF32(b_n * n * hd, "dit.final.norm", TensorKind::kWorkspace));
  ASSIGN_OR_RETURN(DeviceTensor rstd,
                   allocator.AllocateF32(b_n * n, "dit.final.rstd", TensorKind::kWorkspace));
  ASSIGN_OR_RETURN(DeviceTensor modx,
                   allocator.AllocateF32(b_n * n * hd, "dit.final.modx", TensorKind::kWorkspace));
  ASSIGN_OR_RETURN(DeviceTensor out,
                   allocator.AllocateF32(b_n * n * cin, "dit.out", TensorKind::kActivation));
  ops::LinearForward(cond.f32(), b_n, hd, p + off_.w_fmod, 2 * hd, p + off_.b_fmod, 2 * hd,
                     fmod.f32(), 2 * hd);
  for (int64_t b = 0; b < b_n; ++b) {
    ops::LayerNormForward(h.f32() + (b * l_n + txt) * hd, n, hd, config_.layer_norm_eps,
                          norm.f32() + b * n * hd, rstd.f32() + b * n);
  }
  ops::ModulateForward(norm.f32(), cu_img, hd, fmod.f32(), fmod.f32() + hd, 2 * hd, modx.f32());
  ops::LinearForward(modx.f32(), b_n * n, hd, p + off_.w_out, cin, p + off_.b_out, cin, out.f32(),
                     cin);
  h.Reset();
  cond.Reset();
  op.Count(2.0 * static_cast<double>(b_n * n * hd * cin + b_n * hd * 2 * hd),
           4.0 * static_cast<double>(b_n * n * hd * 3));
  return out;
}

}  // namespace tessera::xema
