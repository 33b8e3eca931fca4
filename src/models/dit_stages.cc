// The stages of TinyDit's forward; see dit_stages.h.
#include "models/dit_stages.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "models/ops.h"

namespace tessera::models {
namespace {

namespace ops = ops;
using kernels::Transpose;

// Softmax of each of `rows` rows of length `cols` in place.
void DitSoftmaxRows(float* s, int64_t rows, int64_t cols) {
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
// the scores of every (sequence, head) are materialised in `scores` (B H, ceil(L / chunks),
// L), softmaxed and multiplied by V.
void DitChunkedAttention(const float* q, const float* k, const float* v, float* o, int64_t batch,
                         int64_t seq_len, int64_t heads, int64_t head_dim, int64_t chunks,
                         float* scores) {
  const int64_t rows_per_chunk = (seq_len + chunks - 1) / chunks;
  const int64_t ld = heads * head_dim;
  const int64_t slice = rows_per_chunk * seq_len;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (int64_t r0 = 0; r0 < seq_len; r0 += rows_per_chunk) {
    const int64_t rows = std::min(rows_per_chunk, seq_len - r0);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        float* s = scores + (b * heads + h) * slice;
        const float* qh = q + (b * seq_len + r0) * ld + h * head_dim;
        const float* kh = k + b * seq_len * ld + h * head_dim;
        kernels::GemmUnchecked(Transpose::kNo, Transpose::kYes, rows, seq_len, head_dim, scale, qh,
                               ld, kh, ld, 0.0f, s, seq_len);
      }
    }
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        float* s = scores + (b * heads + h) * slice;
        DitSoftmaxRows(s, rows, seq_len);
        const float* vh = v + b * seq_len * ld + h * head_dim;
        float* oh = o + (b * seq_len + r0) * ld + h * head_dim;
        kernels::GemmUnchecked(Transpose::kNo, Transpose::kNo, rows, head_dim, seq_len, 1.0f, s,
                               seq_len, vh, ld, 0.0f, oh, ld);
      }
    }
  }
}

bool DitHasText(const TinyDit::Input& in) {
  return in.text_ctx != nullptr && !in.text_ctx->empty();
}
bool DitHasPool(const TinyDit::Input& in) {
  return in.pool_ctx != nullptr && !in.pool_ctx->empty();
}

}  // namespace

core::Status DitStages::Validate(const TinyDit& dit, const TinyDit::Input& in,
                                 const DitExecution& execution) {
  const int64_t hd = dit.config_.hidden;
  const int64_t b_n = in.batch, n = in.image_tokens;
  const bool has_text = DitHasText(in);
  const int64_t txt = has_text ? in.text_tokens : 0;
  if (in.latent == nullptr || n < 1 || b_n < 1 || b_n > kMaxDitBatch) {
    return core::InvalidArgument(fmt::format(
        "TinyDit::Forward: got batch {} and {} image tokens{}; need batch in [1, {}], >= 1 token "
        "and a latent",
        b_n, n, in.latent == nullptr ? " without a latent" : "", kMaxDitBatch));
  }
  if (in.latents < 1 || in.latents > b_n || b_n % in.latents != 0) {
    return core::InvalidArgument(fmt::format(
        "TinyDit::Forward: latents: got {} with batch {}; need latents in [1, batch] dividing "
        "batch (sequence b reads latent b % latents)",
        in.latents, b_n));
  }
  if (has_text && (txt < 1 || in.text_ctx->f32_count() != b_n * txt * hd)) {
    return core::InvalidArgument(
        fmt::format("TinyDit::Forward: text context has {} floats, need batch * text_tokens * "
                    "hidden = {} * {} * {}",
                    in.text_ctx->f32_count(), b_n, txt, hd));
  }
  if (DitHasPool(in) && in.pool_ctx->f32_count() != b_n * hd) {
    return core::InvalidArgument(
        fmt::format("TinyDit::Forward: pooled context has {} floats, need batch * hidden = {}",
                    in.pool_ctx->f32_count(), b_n * hd));
  }
  if (execution.attention_chunks < 1 || execution.ffn_chunks < 1) {
    return core::InvalidArgument(fmt::format(
        "TinyDit::Forward: got {} attention chunks and {} FFN chunks, both must be >= 1",
        execution.attention_chunks, execution.ffn_chunks));
  }
  return core::Status::Ok();
}

DitRows DitStages::AllRows(const TinyDit::Input& in) {
  DitRows rows;
  rows.batch = in.batch;
  rows.text_tokens = DitHasText(in) ? in.text_tokens : 0;
  rows.image_tokens = in.image_tokens;
  rows.begin = 0;
  rows.end = rows.seq_len();
  return rows;
}

void DitStages::Condition(const TinyDit& dit, const TinyDit::Input& in, float* temb, float* cond) {
  const SmallDitConfig& c = dit.config_;
  const int64_t hd = c.hidden, ft = c.timestep_freq_dim, b_n = in.batch;
  const float* p = dit.params_.f32();
  const TinyDit::Offsets& off = dit.off_;
  // Timestep MLP (one row, shared by the sequences), plus each sequence's pooled text.
  float* freq = temb;
  float* t_pre = freq + ft;
  float* t_act = t_pre + hd;
  const float t_scaled = 1000.0f * in.t;
  ops::SinusoidalEmbedding(&t_scaled, 1, ft, 10000.0f, freq);
  ops::LinearForward(freq, 1, ft, p + off.w_t1, hd, p + off.b_t1, hd, t_pre, hd);
  ops::SiluForward(t_pre, hd, t_act);
  ops::LinearForward(t_act, 1, hd, p + off.w_t2, hd, p + off.b_t2, hd, t_pre, hd);
  const bool has_pool = DitHasPool(in);
  for (int64_t b = 0; b < b_n; ++b) {
    float* cb = cond + b * hd;
    std::copy(t_pre, t_pre + hd, cb);
    if (has_pool) {
      const float* pool = in.pool_ctx->f32() + b * hd;
      for (int64_t j = 0; j < hd; ++j) cb[j] += pool[j];
    }
  }
  ops::SiluForward(cond, b_n * hd, cond);
}

void DitStages::Embed(const TinyDit& dit, const TinyDit::Input& in, const DitRows& rows,
                      float* pos_row, float* h) {
  const int64_t hd = dit.config_.hidden, cin = dit.config_.in_channels;
  const int64_t txt = rows.text_tokens, per_seq = rows.per_seq(), g_n = in.latents;
  const float* p = dit.params_.f32();
  const TinyDit::Offsets& off = dit.off_;
  // Image rows: those of latent g are embedded in sequence g, then copied to the sequences
  // b > g with b % G == g.
  const int64_t img_begin = rows.image_begin(), img_rows = rows.image_per_seq();
  const int64_t img_local = img_begin - rows.begin;  // first image row within a local sequence
  auto image_of = [&](int64_t b) { return h + (b * per_seq + img_local) * hd; };
  if (img_rows > 0) {
    for (int64_t g = 0; g < g_n; ++g) {
      ops::LinearForward(in.latent + (g * rows.image_tokens + img_begin - txt) * cin, img_rows, cin,
                         p + off.w_in, hd, p + off.b_in, hd, image_of(g), hd);
    }
  }
  for (int64_t t = 0; t < img_rows; ++t) {
    const float pos = static_cast<float>(img_begin - txt + t);
    ops::SinusoidalEmbedding(&pos, 1, hd, 10000.0f, pos_row);
    for (int64_t g = 0; g < g_n; ++g) {
      float* row = image_of(g) + t * hd;
      for (int64_t j = 0; j < hd; ++j) row[j] += pos_row[j];
    }
  }
  const int64_t txt_rows = std::max<int64_t>(0, std::min(rows.end, txt) - rows.begin);
  for (int64_t b = 0; b < rows.batch; ++b) {
    float* seq = h + b * per_seq * hd;
    if (b >= g_n) {
      const float* src = image_of(b % g_n);
      std::copy(src, src + img_rows * hd, seq + img_local * hd);
    }
    if (txt_rows > 0) {
      const float* ctx = in.text_ctx->f32() + (b * txt + rows.begin) * hd;
      std::copy(ctx, ctx + txt_rows * hd, seq);
    }
  }
}

core::Status DitStages::FinishEmbed(const TinyDit::Input& in) {
  if (in.release_context) {
    if (in.text_ctx != nullptr) in.text_ctx->Reset();
    if (in.pool_ctx != nullptr) in.pool_ctx->Reset();
  }
  if (in.after_embed) RETURN_IF_ERROR(in.after_embed());
  return core::Status::Ok();
}

DitCost DitStages::EmbedCost(const TinyDit& dit, const DitRows& rows, int64_t latents) {
  const int64_t hd = dit.config_.hidden, cin = dit.config_.in_channels;
  const int64_t ft = dit.config_.timestep_freq_dim, n = rows.image_per_seq();
  return {2.0 * static_cast<double>(latents * n * cin * hd + ft * hd + hd * hd),
          4.0 * static_cast<double>(rows.local() * hd)};
}

void DitStages::BlockQkv(const TinyDit& dit, int64_t layer, const DitRows& rows, const float* cond,
                         const float* x, float* mod, float* norm, float* rstd, float* modx,
                         float* q, float* k, float* v) {
  const SmallDitConfig& c = dit.config_;
  const int64_t hd = c.hidden, ld_mod = 6 * hd, local = rows.local();
  const float* p = dit.params_.f32();
  const TinyDit::BlockOffsets& bo = dit.off_.blocks[layer];
  const DitCuSeqlens cu(rows.batch, rows.per_seq());
  ops::LinearForward(cond, rows.batch, hd, p + bo.w_mod, ld_mod, p + bo.b_mod, ld_mod, mod, ld_mod);
  ops::LayerNormForward(x, local, hd, c.layer_norm_eps, norm, rstd);
  ops::ModulateForward(norm, cu.span(), hd, mod, mod + hd, ld_mod, modx);
  float* qkv[3] = {q, k, v};
  for (int64_t i = 0; i < 3; ++i) {
    ops::LinearForward(modx, local, hd, p + bo.w_qkv + i * hd, 3 * hd, p + bo.b_qkv + i * hd, hd,
                       qkv[i], hd);
  }
}

int64_t DitStages::AttentionWorkspaceFloats(const DitExecution& execution, int64_t batch,
                                            int64_t seq_len, int64_t heads, const char** what) {
  if (execution.attention == AttentionMode::kFused) {
    *what = "lse";
    return batch * seq_len * heads;
  }
  *what = "scores";
  const int64_t rows_per_chunk =
      (seq_len + execution.attention_chunks - 1) / execution.attention_chunks;
  return batch * heads * rows_per_chunk * seq_len;
}

core::Status DitStages::Attention(const DitExecution& execution, const std::string& op_name,
                                  int64_t batch, int64_t seq_len, int64_t heads, int64_t head_dim,
                                  const float* q, const float* k, const float* v, float* o,
                                  float* workspace) {
  if (execution.attention == AttentionMode::kChunked) {
    DitChunkedAttention(q, k, v, o, batch, seq_len, heads, head_dim, execution.attention_chunks,
                        workspace);
    return core::Status::Ok();
  }
  const DitCuSeqlens cu(batch, seq_len);
  kernels::AttentionShape shape;
  shape.num_heads = heads;
  shape.head_dim = head_dim;
  shape.cu_seqlens_q = cu.span();
  shape.cu_seqlens_k = cu.span();
  return kernels::AttentionForward(shape, q, k, v, o, workspace).WithPrefix(op_name + " attention");
}

void DitStages::BlockOutFfn(const TinyDit& dit, int64_t layer, const DitRows& rows,
                            const float* mod, const float* attn, int64_t ffn_rows, float* x,
                            float* norm, float* rstd, float* modx, float* ffn) {
  const SmallDitConfig& c = dit.config_;
  const int64_t hd = c.hidden, f = c.ffn_hidden, ld_mod = 6 * hd, local = rows.local();
  const float* p = dit.params_.f32();
  const TinyDit::BlockOffsets& bo = dit.off_.blocks[layer];
  const DitCuSeqlens cu(rows.batch, rows.per_seq());
  ops::LinearForward(attn, local, hd, p + bo.w_o, hd, p + bo.b_o, hd, norm, hd);
  ops::GatedResidualForward(norm, cu.span(), hd, mod + 2 * hd, ld_mod, x);
  // MLP half.
  ops::LayerNormForward(x, local, hd, c.layer_norm_eps, norm, rstd);
  ops::ModulateForward(norm, cu.span(), hd, mod + 3 * hd, mod + 4 * hd, ld_mod, modx);
  // FFN over row chunks through the one hidden workspace; its output rows land in `norm`.
  for (int64_t r0 = 0; r0 < local; r0 += ffn_rows) {
    const int64_t m = std::min(ffn_rows, local - r0);
    ops::LinearForward(modx + r0 * hd, m, hd, p + bo.w_ff1, f, p + bo.b_ff1, f, ffn, f);
    ops::GeluForward(ffn, m * f, ffn);
    ops::LinearForward(ffn, m, f, p + bo.w_ff2, hd, p + bo.b_ff2, hd, norm + r0 * hd, hd);
  }
  ops::GatedResidualForward(norm, cu.span(), hd, mod + 5 * hd, ld_mod, x);
}

DitCost DitStages::BlockCost(const TinyDit& dit, const DitRows& rows, int64_t attention_heads) {
  const SmallDitConfig& c = dit.config_;
  const int64_t hd = c.hidden, ld_mod = 6 * hd, b_n = rows.batch, l_n = rows.seq_len();
  const double rows_d = static_cast<double>(rows.local()), hd_d = static_cast<double>(hd);
  const double att_d = static_cast<double>(attention_heads * c.head_dim());
  return {2.0 * rows_d * hd_d * (4.0 * hd_d + 2.0 * static_cast<double>(c.ffn_hidden)) +
              2.0 * static_cast<double>(b_n) * hd_d * static_cast<double>(ld_mod) +
              4.0 * static_cast<double>(b_n * l_n * l_n) * att_d,
          4.0 * rows_d * hd_d * 12.0};
}

void DitStages::Final(const TinyDit& dit, const DitRows& rows, const float* h, const float* cond,
                      float* fmod, float* norm, float* rstd, float* modx, float* out) {
  const SmallDitConfig& c = dit.config_;
  const int64_t hd = c.hidden, cin = c.in_channels, b_n = rows.batch;
  const int64_t n = rows.image_per_seq(), img_local = rows.image_begin() - rows.begin;
  if (n == 0) return;
  const float* p = dit.params_.f32();
  const TinyDit::Offsets& off = dit.off_;
  const DitCuSeqlens cu_img(b_n, n);
  ops::LinearForward(cond, b_n, hd, p + off.w_fmod, 2 * hd, p + off.b_fmod, 2 * hd, fmod, 2 * hd);
  for (int64_t b = 0; b < b_n; ++b) {
    ops::LayerNormForward(h + (b * rows.per_seq() + img_local) * hd, n, hd, c.layer_norm_eps,
                          norm + b * n * hd, rstd + b * n);
  }
  ops::ModulateForward(norm, cu_img.span(), hd, fmod, fmod + hd, 2 * hd, modx);
  ops::LinearForward(modx, b_n * n, hd, p + off.w_out, cin, p + off.b_out, cin, out, cin);
}

DitCost DitStages::FinalCost(const TinyDit& dit, const DitRows& rows) {
  const int64_t hd = dit.config_.hidden, cin = dit.config_.in_channels, b_n = rows.batch;
  const int64_t n = rows.image_per_seq();
  return {2.0 * static_cast<double>(b_n * n * hd * cin + b_n * hd * 2 * hd),
          4.0 * static_cast<double>(b_n * n * hd * 3)};
}

}  // namespace tessera::models
