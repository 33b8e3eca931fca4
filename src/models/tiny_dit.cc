#include "models/tiny_dit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/rng.h"
#include "models/dit_stages.h"
#include "models/ops.h"

namespace tessera::models {
namespace {

namespace ops = ops;

}  // namespace

int64_t FfnChunkRows(int64_t rows, int64_t chunks) {
  const int64_t m = kFfnChunkRowMultiple;
  int64_t r = ((rows + chunks - 1) / chunks + m - 1) / m * m;
  while (r < rows && rows % r == 1) r += m;
  return std::min(r, rows);
}

core::StatusOr<TinyDit> TinyDit::Create(const SmallDitConfig& config, int64_t text_hidden,
                                        uint64_t text_seed, runtime::DeviceAllocator& allocator) {
  if (text_hidden < 1 || text_hidden > (int64_t{1} << 16)) {
    return core::InvalidArgument(
        fmt::format("TinyDit text_hidden: got {}, must be in [1, 65536]", text_hidden));
  }
  ASSIGN_OR_RETURN(SmallDit reference, SmallDit::Create(config));
  TinyDit dit;
  dit.config_ = config;
  dit.text_hidden_ = text_hidden;
  Offsets& o = dit.off_;
  static_cast<SmallDitOffsets&>(o) = reference.ParameterOffsets();

  const std::span<const float> params = reference.Parameters();
  ASSIGN_OR_RETURN(dit.params_, allocator.AllocateF32(static_cast<int64_t>(params.size()),
                                                      "dit.params", runtime::TensorKind::kWeight));
  std::copy(params.begin(), params.end(), dit.params_.f32());

  const int64_t hd = config.hidden, th = text_hidden;
  o.w_txt = 0;
  o.b_txt = th * hd;
  o.w_pool = o.b_txt + hd;
  o.b_pool = o.w_pool + th * hd;
  const int64_t text_floats = o.b_pool + hd;
  ASSIGN_OR_RETURN(dit.text_,
                   allocator.AllocateF32(text_floats, "dit.text", runtime::TensorKind::kWeight));
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

core::Status TinyDit::ProjectText(runtime::DeviceAllocator& allocator,
                                  std::span<const float* const> text,
                                  std::span<const float* const> pooled, int64_t text_tokens,
                                  runtime::DeviceTensor* text_ctx, runtime::DeviceTensor* pool_ctx,
                                  double* flops) const {
  const int64_t batch = static_cast<int64_t>(text.size());
  if (batch < 1 || batch > kMaxDitBatch || pooled.size() != text.size() || text_tokens < 1) {
    return core::InvalidArgument(fmt::format(
        "TinyDit::ProjectText: got {} prompts, {} pooled vectors and {} tokens; need 1 to {} "
        "prompts, one pooled vector each and >= 1 token",
        batch, pooled.size(), text_tokens, kMaxDitBatch));
  }
  const int64_t hd = config_.hidden, th = text_hidden_;
  ASSIGN_OR_RETURN(runtime::DeviceTensor ctx,
                   allocator.AllocateF32(batch * text_tokens * hd, "dit.text_ctx",
                                         runtime::TensorKind::kActivation));
  ASSIGN_OR_RETURN(
      runtime::DeviceTensor pool,
      allocator.AllocateF32(batch * hd, "dit.pool_ctx", runtime::TensorKind::kActivation));
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

core::StatusOr<runtime::DeviceTensor> TinyDit::Forward(runtime::DeviceAllocator& allocator,
                                                       const Input& in,
                                                       const DitExecution& execution,
                                                       const runtime::OpContext& context) const {
  RETURN_IF_ERROR(DitStages::Validate(*this, in, execution));
  const int64_t hd = config_.hidden, f = config_.ffn_hidden, cin = config_.in_channels;
  const int64_t ft = config_.timestep_freq_dim, heads = config_.num_heads;
  const DitRows all = DitStages::AllRows(in);
  const int64_t b_n = all.batch, n = all.image_tokens, l_n = all.seq_len(), rows = all.local();
  // FFN rows per chunk (the reused hidden workspace's height).
  const int64_t ffn_rows = FfnChunkRows(rows, execution.ffn_chunks);

  runtime::DeviceTensor h, cond;
  {
    runtime::OpScope op(allocator, "dit.embed", context);
    ASSIGN_OR_RETURN(
        runtime::DeviceTensor temb,
        allocator.AllocateF32(ft + 3 * hd, "dit.embed.temb", runtime::TensorKind::kWorkspace));
    ASSIGN_OR_RETURN(cond,
                     allocator.AllocateF32(b_n * hd, "dit.cond", runtime::TensorKind::kActivation));
    ASSIGN_OR_RETURN(h,
                     allocator.AllocateF32(rows * hd, "dit.h", runtime::TensorKind::kActivation));
    DitStages::Condition(*this, in, temb.f32(), cond.f32());
    DitStages::Embed(*this, in, all, temb.f32() + ft + 2 * hd, h.f32());
    RETURN_IF_ERROR(DitStages::FinishEmbed(in));
    const DitCost cost = DitStages::EmbedCost(*this, all, in.latents);
    op.Count(cost.flops, cost.bytes);
  }

  const char* att_what = nullptr;
  const int64_t att_floats =
      DitStages::AttentionWorkspaceFloats(execution, b_n, l_n, heads, &att_what);
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const std::string name = fmt::format("dit.block{}", l);
    runtime::OpScope op(allocator, name, context);
    auto ws = [&](int64_t count, const char* what) {
      return allocator.AllocateF32(count, fmt::format("{}.{}", name, what),
                                   runtime::TensorKind::kWorkspace);
    };
    ASSIGN_OR_RETURN(runtime::DeviceTensor mod, ws(b_n * 6 * hd, "mod"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor norm, ws(rows * hd, "norm"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor rstd, ws(rows, "rstd"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor modx, ws(rows * hd, "modx"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor q, ws(rows * hd, "q"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor k, ws(rows * hd, "k"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor v, ws(rows * hd, "v"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor attn, ws(rows * hd, "attn"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor ffn, ws(ffn_rows * f, "ffn"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor att_ws, ws(att_floats, att_what));
    DitStages::BlockQkv(*this, l, all, cond.f32(), h.f32(), mod.f32(), norm.f32(), rstd.f32(),
                        modx.f32(), q.f32(), k.f32(), v.f32());
    RETURN_IF_ERROR(DitStages::Attention(execution, name, b_n, l_n, heads, config_.head_dim(),
                                         q.f32(), k.f32(), v.f32(), attn.f32(), att_ws.f32()));
    DitStages::BlockOutFfn(*this, l, all, mod.f32(), attn.f32(), ffn_rows, h.f32(), norm.f32(),
                           rstd.f32(), modx.f32(), ffn.f32());
    const DitCost cost = DitStages::BlockCost(*this, all, heads);
    op.Count(cost.flops, cost.bytes);
  }

  runtime::OpScope op(allocator, "dit.final", context);
  auto fws = [&](int64_t count, const char* what) {
    return allocator.AllocateF32(count, fmt::format("dit.final.{}", what),
                                 runtime::TensorKind::kWorkspace);
  };
  ASSIGN_OR_RETURN(runtime::DeviceTensor fmod, fws(b_n * 2 * hd, "mod"));
  ASSIGN_OR_RETURN(runtime::DeviceTensor norm, fws(b_n * n * hd, "norm"));
  ASSIGN_OR_RETURN(runtime::DeviceTensor rstd, fws(b_n * n, "rstd"));
  ASSIGN_OR_RETURN(runtime::DeviceTensor modx, fws(b_n * n * hd, "modx"));
  ASSIGN_OR_RETURN(
      runtime::DeviceTensor out,
      allocator.AllocateF32(b_n * n * cin, "dit.out", runtime::TensorKind::kActivation));
  DitStages::Final(*this, all, h.f32(), cond.f32(), fmod.f32(), norm.f32(), rstd.f32(), modx.f32(),
                   out.f32());
  h.Reset();
  cond.Reset();
  const DitCost cost = DitStages::FinalCost(*this, all);
  op.Count(cost.flops, cost.bytes);
  return out;
}

}  // namespace tessera::models
