#include "models/small_dit.h"

#include <cmath>
#include <string>

#include "core/rng.h"
#include "models/ops.h"

namespace tessera::models {
namespace {

using core::Status;

Status ValidateBatch(const SmallDitConfig& c, const DitBatch& batch) {
  if (batch.cu_seqlens.size() < 2) {
    return core::InvalidArgument("batch.cu_seqlens: got " +
                                 std::to_string(batch.cu_seqlens.size()) +
                                 " offsets, need >= 2 (at least one sequence)");
  }
  if (batch.cu_seqlens[0] != 0) {
    return core::InvalidArgument("batch.cu_seqlens[0]: got " + std::to_string(batch.cu_seqlens[0]) +
                                 ", must be 0");
  }
  for (size_t i = 1; i < batch.cu_seqlens.size(); ++i) {
    if (batch.cu_seqlens[i] <= batch.cu_seqlens[i - 1]) {
      return core::InvalidArgument("batch.cu_seqlens[" + std::to_string(i) + "]: got " +
                                   std::to_string(batch.cu_seqlens[i]) +
                                   ", must exceed the previous offset (sequences are non-empty)");
    }
  }
  const int64_t want = batch.num_tokens() * c.in_channels;
  if (static_cast<int64_t>(batch.latents.size()) != want) {
    return core::InvalidArgument("batch.latents: got " + std::to_string(batch.latents.size()) +
                                 " floats, need tokens * in_channels = " + std::to_string(want));
  }
  if (static_cast<int64_t>(batch.timesteps.size()) != batch.num_seqs()) {
    return core::InvalidArgument(
        "batch.timesteps: got " + std::to_string(batch.timesteps.size()) +
        " values, need one per sequence = " + std::to_string(batch.num_seqs()));
  }
  if (!batch.position_offsets.empty()) {
    if (static_cast<int64_t>(batch.position_offsets.size()) != batch.num_seqs()) {
      return core::InvalidArgument(
          "batch.position_offsets: got " + std::to_string(batch.position_offsets.size()) +
          " values, need none or one per sequence = " + std::to_string(batch.num_seqs()));
    }
    for (int64_t o : batch.position_offsets) {
      if (o < 0) {
        return core::InvalidArgument("batch.position_offsets: got " + std::to_string(o) +
                                     ", must be >= 0");
      }
    }
  }
  for (float t : batch.timesteps) {
    if (!std::isfinite(t)) return core::InvalidArgument("batch.timesteps: got a non-finite value");
  }
  return Status::Ok();
}

int64_t VecBytes(const std::vector<float>& v) {
  return static_cast<int64_t>(v.size() * sizeof(float));
}

}  // namespace

double SmallDitParameterCount(const SmallDitConfig& c) {
  const double hd = static_cast<double>(c.hidden), f = static_cast<double>(c.ffn_hidden);
  const double cin = static_cast<double>(c.in_channels);
  const double tf = static_cast<double>(c.timestep_freq_dim);
  const double block = (6 * hd * hd + 6 * hd) + (3 * hd * hd + 3 * hd) + (hd * hd + hd) +
                       (hd * f + f) + (f * hd + hd);
  return (cin * hd + hd) + (tf * hd + hd) + (hd * hd + hd) +
         static_cast<double>(c.num_layers) * block + (2 * hd * hd + 2 * hd) + (hd * cin + cin);
}

Status ValidateSmallDitConfig(const SmallDitConfig& c) {
  auto positive = [](const char* name, int64_t v) -> Status {
    if (v < 1) {
      return core::InvalidArgument(std::string("SmallDitConfig.") + name + ": got " +
                                   std::to_string(v) + ", must be >= 1");
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(positive("in_channels", c.in_channels));
  RETURN_IF_ERROR(positive("hidden", c.hidden));
  RETURN_IF_ERROR(positive("num_heads", c.num_heads));
  RETURN_IF_ERROR(positive("num_layers", c.num_layers));
  RETURN_IF_ERROR(positive("ffn_hidden", c.ffn_hidden));
  RETURN_IF_ERROR(positive("timestep_freq_dim", c.timestep_freq_dim));
  // Sizes are bounded before any product is formed (no int64 overflow below).
  auto at_most = [](const char* name, int64_t v, int64_t hi) -> Status {
    if (v > hi) {
      return core::InvalidArgument(std::string("SmallDitConfig.") + name + ": got " +
                                   std::to_string(v) + ", must be <= " + std::to_string(hi));
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(at_most("in_channels", c.in_channels, int64_t{1} << 20));
  RETURN_IF_ERROR(at_most("hidden", c.hidden, int64_t{1} << 20));
  RETURN_IF_ERROR(at_most("num_layers", c.num_layers, int64_t{1} << 16));
  RETURN_IF_ERROR(at_most("ffn_hidden", c.ffn_hidden, int64_t{1} << 24));
  RETURN_IF_ERROR(at_most("timestep_freq_dim", c.timestep_freq_dim, int64_t{1} << 20));
  const double params = SmallDitParameterCount(c);
  if (params > static_cast<double>(kMaxSmallDitParameters)) {
    return core::InvalidArgument(
        "SmallDitConfig: " + std::to_string(params) +
        " parameters, must be <= " + std::to_string(kMaxSmallDitParameters) +
        " (weights, gradients and AdamW state take 16 bytes each)");
  }
  if (c.hidden % c.num_heads != 0) {
    return core::InvalidArgument("SmallDitConfig.num_heads: got " + std::to_string(c.num_heads) +
                                 ", must divide hidden = " + std::to_string(c.hidden));
  }
  if (c.timestep_freq_dim % 2 != 0) {
    return core::InvalidArgument("SmallDitConfig.timestep_freq_dim: got " +
                                 std::to_string(c.timestep_freq_dim) + ", must be even");
  }
  if (!(c.layer_norm_eps > 0.0f) || !std::isfinite(c.layer_norm_eps)) {
    return core::InvalidArgument("SmallDitConfig.layer_norm_eps: got " +
                                 std::to_string(c.layer_norm_eps) +
                                 ", must be positive and finite");
  }
  if (!(c.modulation_init_std >= 0.0f) || !std::isfinite(c.modulation_init_std)) {
    return core::InvalidArgument("SmallDitConfig.modulation_init_std: got " +
                                 std::to_string(c.modulation_init_std) +
                                 ", must be >= 0 and finite");
  }
  return Status::Ok();
}

int64_t SmallDitActivations::Bytes() const {
  int64_t bytes = static_cast<int64_t>(cu_seqlens.size() * sizeof(int64_t));
  for (const auto* v : {&latents, &t_freq, &t_pre, &t_act, &cond, &cond_act, &final_mod, &norm_f,
                        &rstd_f, &mod_f, &output}) {
    bytes += VecBytes(*v);
  }
  for (const Block& b : blocks) {
    for (const auto* v :
         {&b.mod, &b.norm1, &b.rstd1, &b.mod1, &b.q, &b.k, &b.v, &b.attn, &b.lse, &b.proj, &b.norm2,
          &b.rstd2, &b.mod2, &b.ffn_pre, &b.ffn_act, &b.ffn_out}) {
      bytes += VecBytes(*v);
    }
  }
  return bytes;
}

int64_t SmallDit::ActivationBytes(const SmallDitConfig& c, int64_t num_tokens, int64_t num_seqs) {
  const int64_t t = num_tokens, s = num_seqs, hd = c.hidden, f = c.ffn_hidden;
  const int64_t per_block = 6 * s * hd + t * (10 * hd + 2 + c.num_heads + 2 * f);
  const int64_t floats = t * c.in_channels + s * c.timestep_freq_dim + 4 * s * hd +
                         c.num_layers * per_block + 2 * s * hd + t * (2 * hd + 1) +
                         t * c.in_channels;
  return floats * static_cast<int64_t>(sizeof(float)) +
         (s + 1) * static_cast<int64_t>(sizeof(int64_t));
}

int64_t SmallDit::BackwardScratchBytes(const SmallDitConfig& c, int64_t num_tokens,
                                       int64_t num_seqs) {
  const int64_t floats =
      6 * num_tokens * c.hidden + 2 * num_tokens * c.ffn_hidden + 11 * num_seqs * c.hidden;
  return floats * static_cast<int64_t>(sizeof(float));
}

int64_t SmallDit::ScratchBytes() const {
  const BackwardScratch& s = scratch_;
  int64_t bytes = 0;
  for (const auto* v : {&s.dx_a, &s.dx_b, &s.dh, &s.dq, &s.dk, &s.dv, &s.dffn_a, &s.dffn_b, &s.dmod,
                        &s.dfinal_mod, &s.dcond_act, &s.ds_a, &s.ds_b}) {
    bytes += VecBytes(*v);
  }
  return bytes;
}

namespace {

struct FlopParts {
  int64_t linear = 0;
  int64_t attention = 0;
};

FlopParts CountFlops(const SmallDitConfig& c, std::span<const int64_t> seq_lens) {
  const int64_t hd = c.hidden, f = c.ffn_hidden, l = c.num_layers;
  int64_t t = 0, sq = 0;
  for (int64_t len : seq_lens) {
    t += len;
    sq += len * len;
  }
  const int64_t s = static_cast<int64_t>(seq_lens.size());
  FlopParts p;
  p.linear = 2 * t * (c.in_channels * hd + l * (4 * hd * hd + 2 * hd * f) + hd * c.in_channels) +
             2 * s * (c.timestep_freq_dim * hd + hd * hd + 6 * l * hd * hd + 2 * hd * hd);
  p.attention = 4 * sq * hd * l;
  return p;
}

}  // namespace

int64_t SmallDit::ForwardFlops(const SmallDitConfig& c, std::span<const int64_t> seq_lens) {
  const FlopParts p = CountFlops(c, seq_lens);
  return p.linear + p.attention;
}

int64_t SmallDit::TrainingStepFlops(const SmallDitConfig& c, std::span<const int64_t> seq_lens) {
  const FlopParts p = CountFlops(c, seq_lens);
  return 3 * p.linear + p.attention + p.attention * 5 / 2;
}

SmallDit::SmallDit(const SmallDitConfig& config) : config_(config) {}

int64_t SmallDit::AddTensor(const std::string& name, int64_t rows, int64_t cols) {
  const int64_t offset = tensors_.empty() ? 0 : tensors_.back().offset + tensors_.back().size();
  // Biases are the one-row tensors named b_* (a weight may have one row when C_in = 1).
  const bool is_bias = rows == 1 && name.substr(name.rfind('.') + 1).starts_with("b_");
  tensors_.push_back({name, offset, rows, cols, is_bias});
  return offset;
}

core::StatusOr<SmallDit> SmallDit::Create(const SmallDitConfig& config) {
  RETURN_IF_ERROR(ValidateSmallDitConfig(config));
  SmallDit m(config);
  const int64_t hd = config.hidden, f = config.ffn_hidden, cin = config.in_channels;
  Offsets& o = m.off_;
  o.w_in = m.AddTensor("w_in", cin, hd);
  o.b_in = m.AddTensor("b_in", 1, hd);
  o.w_t1 = m.AddTensor("w_t1", config.timestep_freq_dim, hd);
  o.b_t1 = m.AddTensor("b_t1", 1, hd);
  o.w_t2 = m.AddTensor("w_t2", hd, hd);
  o.b_t2 = m.AddTensor("b_t2", 1, hd);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const std::string p = "block" + std::to_string(l) + ".";
    BlockOffsets b;
    b.w_mod = m.AddTensor(p + "w_mod", hd, 6 * hd);
    b.b_mod = m.AddTensor(p + "b_mod", 1, 6 * hd);
    b.w_qkv = m.AddTensor(p + "w_qkv", hd, 3 * hd);
    b.b_qkv = m.AddTensor(p + "b_qkv", 1, 3 * hd);
    b.w_o = m.AddTensor(p + "w_o", hd, hd);
    b.b_o = m.AddTensor(p + "b_o", 1, hd);
    b.w_ff1 = m.AddTensor(p + "w_ff1", hd, f);
    b.b_ff1 = m.AddTensor(p + "b_ff1", 1, f);
    b.w_ff2 = m.AddTensor(p + "w_ff2", f, hd);
    b.b_ff2 = m.AddTensor(p + "b_ff2", 1, hd);
    o.blocks.push_back(b);
  }
  o.w_fmod = m.AddTensor("w_fmod", hd, 2 * hd);
  o.b_fmod = m.AddTensor("b_fmod", 1, 2 * hd);
  o.w_out = m.AddTensor("w_out", hd, cin);
  o.b_out = m.AddTensor("b_out", 1, cin);
  const int64_t total = m.tensors_.back().offset + m.tensors_.back().size();
  m.params_.assign(total, 0.0f);
  m.grads_.assign(total, 0.0f);
  const core::Rng root(config.init_seed);
  for (size_t i = 0; i < m.tensors_.size(); ++i) {
    const ParameterTensor& t = m.tensors_[i];
    if (t.is_bias) continue;  // biases start at 0
    const bool is_mod = t.name.ends_with("w_mod") || t.name == "w_fmod";
    const double std_dev =
        is_mod ? config.modulation_init_std : 1.0 / std::sqrt(static_cast<double>(t.rows));
    core::Rng rng = root.Fork(i);
    for (int64_t j = 0; j < t.size(); ++j) {
      m.params_[t.offset + j] = static_cast<float>(std_dev * rng.Normal());
    }
  }
  return m;
}

std::vector<uint8_t> SmallDit::DecayMask() const {
  std::vector<uint8_t> mask(params_.size(), 0);
  for (const ParameterTensor& t : tensors_) {
    if (!t.is_bias) std::fill(mask.begin() + t.offset, mask.begin() + t.offset + t.size(), 1);
  }
  return mask;
}

void SmallDit::ZeroGradients() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

Status SmallDit::Forward(const DitBatch& batch, AttentionBackend& backend,
                         SmallDitActivations* acts) const {
  RETURN_IF_ERROR(ValidateBatch(config_, batch));
  const int64_t t_n = batch.num_tokens(), s_n = batch.num_seqs();
  const int64_t hd = config_.hidden, f = config_.ffn_hidden, cin = config_.in_channels;
  const int64_t ft = config_.timestep_freq_dim;
  const float* p = params_.data();
  acts->num_tokens = t_n;
  acts->num_seqs = s_n;
  acts->cu_seqlens.assign(batch.cu_seqlens.begin(), batch.cu_seqlens.end());
  acts->latents.assign(batch.latents.begin(), batch.latents.end());
  const std::span<const int64_t> cu = acts->cu_seqlens;

  // Timestep embedding MLP: (S, Ft) -> (S, Hd) -> (S, Hd).
  std::vector<float> t_scaled(s_n);
  for (int64_t s = 0; s < s_n; ++s) t_scaled[s] = 1000.0f * batch.timesteps[s];
  acts->t_freq.resize(s_n * ft);
  acts->t_pre.resize(s_n * hd);
  acts->t_act.resize(s_n * hd);
  acts->cond.resize(s_n * hd);
  acts->cond_act.resize(s_n * hd);
  ops::SinusoidalEmbedding(t_scaled.data(), s_n, ft, 10000.0f, acts->t_freq.data());
  ops::LinearForward(acts->t_freq.data(), s_n, ft, p + off_.w_t1, hd, p + off_.b_t1, hd,
                     acts->t_pre.data(), hd);
  ops::SiluForward(acts->t_pre.data(), s_n * hd, acts->t_act.data());
  ops::LinearForward(acts->t_act.data(), s_n, hd, p + off_.w_t2, hd, p + off_.b_t2, hd,
                     acts->cond.data(), hd);
  ops::SiluForward(acts->cond.data(), s_n * hd, acts->cond_act.data());

  // Patch embedding plus fixed positions.
  std::vector<float> h(t_n * hd);
  ops::LinearForward(acts->latents.data(), t_n, cin, p + off_.w_in, hd, p + off_.b_in, hd, h.data(),
                     hd);
  ops::AddPositionEmbedding(cu, batch.position_offsets, hd, h.data());

  kernels::AttentionShape shape;
  shape.num_heads = config_.num_heads;
  shape.head_dim = config_.head_dim();
  shape.cu_seqlens_q = cu;
  shape.cu_seqlens_k = cu;

  acts->blocks.resize(config_.num_layers);
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const BlockOffsets& bo = off_.blocks[l];
    SmallDitActivations::Block& b = acts->blocks[l];
    b.mod.resize(s_n * 6 * hd);
    for (auto* v :
         {&b.norm1, &b.mod1, &b.q, &b.k, &b.v, &b.attn, &b.proj, &b.norm2, &b.mod2, &b.ffn_out}) {
      v->resize(t_n * hd);
    }
    b.rstd1.resize(t_n);
    b.rstd2.resize(t_n);
    b.lse.resize(t_n * config_.num_heads);
    b.ffn_pre.resize(t_n * f);
    b.ffn_act.resize(t_n * f);
    const float* mod = b.mod.data();
    const int64_t ld_mod = 6 * hd;

    ops::LinearForward(acts->cond_act.data(), s_n, hd, p + bo.w_mod, ld_mod, p + bo.b_mod, ld_mod,
                       b.mod.data(), ld_mod);
    // Attention half.
    ops::LayerNormForward(h.data(), t_n, hd, config_.layer_norm_eps, b.norm1.data(),
                          b.rstd1.data());
    ops::ModulateForward(b.norm1.data(), cu, hd, mod, mod + hd, ld_mod, b.mod1.data());
    float* qkv[3] = {b.q.data(), b.k.data(), b.v.data()};
    for (int64_t i = 0; i < 3; ++i) {
      ops::LinearForward(b.mod1.data(), t_n, hd, p + bo.w_qkv + i * hd, 3 * hd,
                         p + bo.b_qkv + i * hd, hd, qkv[i], hd);
    }
    RETURN_IF_ERROR(
        backend.Forward(shape, b.q.data(), b.k.data(), b.v.data(), b.attn.data(), b.lse.data())
            .WithPrefix("block " + std::to_string(l) + " attention forward"));
    ops::LinearForward(b.attn.data(), t_n, hd, p + bo.w_o, hd, p + bo.b_o, hd, b.proj.data(), hd);
    ops::GatedResidualForward(b.proj.data(), cu, hd, mod + 2 * hd, ld_mod, h.data());
    // FFN half.
    ops::LayerNormForward(h.data(), t_n, hd, config_.layer_norm_eps, b.norm2.data(),
                          b.rstd2.data());
    ops::ModulateForward(b.norm2.data(), cu, hd, mod + 3 * hd, mod + 4 * hd, ld_mod, b.mod2.data());
    ops::LinearForward(b.mod2.data(), t_n, hd, p + bo.w_ff1, f, p + bo.b_ff1, f, b.ffn_pre.data(),
                       f);
    ops::GeluForward(b.ffn_pre.data(), t_n * f, b.ffn_act.data());
    ops::LinearForward(b.ffn_act.data(), t_n, f, p + bo.w_ff2, hd, p + bo.b_ff2, hd,
                       b.ffn_out.data(), hd);
    ops::GatedResidualForward(b.ffn_out.data(), cu, hd, mod + 5 * hd, ld_mod, h.data());
  }

  // Final adaLN and head.
  acts->final_mod.resize(s_n * 2 * hd);
  acts->norm_f.resize(t_n * hd);
  acts->rstd_f.resize(t_n);
  acts->mod_f.resize(t_n * hd);
  acts->output.resize(t_n * cin);
  ops::LinearForward(acts->cond_act.data(), s_n, hd, p + off_.w_fmod, 2 * hd, p + off_.b_fmod,
                     2 * hd, acts->final_mod.data(), 2 * hd);
  ops::LayerNormForward(h.data(), t_n, hd, config_.layer_norm_eps, acts->norm_f.data(),
                        acts->rstd_f.data());
  ops::ModulateForward(acts->norm_f.data(), cu, hd, acts->final_mod.data(),
                       acts->final_mod.data() + hd, 2 * hd, acts->mod_f.data());
  ops::LinearForward(acts->mod_f.data(), t_n, hd, p + off_.w_out, cin, p + off_.b_out, cin,
                     acts->output.data(), cin);
  return Status::Ok();
}

Status SmallDit::Backward(const SmallDitActivations& acts, std::span<const float> d_output,
                          AttentionBackend& backend) {
  const int64_t t_n = acts.num_tokens, s_n = acts.num_seqs;
  const int64_t hd = config_.hidden, f = config_.ffn_hidden, cin = config_.in_channels;
  const int64_t ft = config_.timestep_freq_dim;
  if (static_cast<int64_t>(acts.blocks.size()) != config_.num_layers ||
      static_cast<int64_t>(acts.output.size()) != t_n * cin) {
    return core::InvalidArgument("acts: not produced by Forward of this model");
  }
  if (static_cast<int64_t>(d_output.size()) != t_n * cin) {
    return core::InvalidArgument(
        "d_output: got " + std::to_string(d_output.size()) +
        " floats, need tokens * in_channels = " + std::to_string(t_n * cin));
  }
  const float* p = params_.data();
  float* g = grads_.data();
  const std::span<const int64_t> cu = acts.cu_seqlens;

  // Head and final adaLN.
  // Scratch reused across calls (assign keeps the capacity: no page faults after the first).
  std::vector<float>& dx_a = scratch_.dx_a;
  std::vector<float>& dx_b = scratch_.dx_b;
  std::vector<float>& dh = scratch_.dh;
  std::vector<float>& dcond_act = scratch_.dcond_act;
  dx_a.resize(t_n * hd);
  dx_b.resize(t_n * hd);
  dh.resize(t_n * hd);
  dcond_act.assign(s_n * hd, 0.0f);
  ops::LinearBackward(acts.mod_f.data(), t_n, hd, p + off_.w_out, cin, cin, d_output.data(), cin,
                      g + off_.w_out, g + off_.b_out, dx_a.data(), false);
  std::vector<float>& dfinal_mod = scratch_.dfinal_mod;
  dfinal_mod.assign(s_n * 2 * hd, 0.0f);
  ops::ModulateBackward(dx_a.data(), acts.norm_f.data(), cu, hd, acts.final_mod.data() + hd, 2 * hd,
                        dx_b.data(), dfinal_mod.data(), dfinal_mod.data() + hd);
  ops::LayerNormBackward(dx_b.data(), acts.norm_f.data(), acts.rstd_f.data(), t_n, hd, dh.data(),
                         false);
  ops::LinearBackward(acts.cond_act.data(), s_n, hd, p + off_.w_fmod, 2 * hd, 2 * hd,
                      dfinal_mod.data(), 2 * hd, g + off_.w_fmod, g + off_.b_fmod, dcond_act.data(),
                      true);

  kernels::AttentionShape shape;
  shape.num_heads = config_.num_heads;
  shape.head_dim = config_.head_dim();
  shape.cu_seqlens_q = cu;
  shape.cu_seqlens_k = cu;

  std::vector<float>& dmod = scratch_.dmod;
  std::vector<float>& dffn_a = scratch_.dffn_a;
  std::vector<float>& dffn_b = scratch_.dffn_b;
  std::vector<float>& dq = scratch_.dq;
  std::vector<float>& dk = scratch_.dk;
  std::vector<float>& dv = scratch_.dv;
  dmod.resize(s_n * 6 * hd);
  dffn_a.resize(t_n * f);
  dffn_b.resize(t_n * f);
  dq.resize(t_n * hd);
  dk.resize(t_n * hd);
  dv.resize(t_n * hd);
  const int64_t ld_mod = 6 * hd;
  for (int64_t l = config_.num_layers - 1; l >= 0; --l) {
    const BlockOffsets& bo = off_.blocks[l];
    const SmallDitActivations::Block& b = acts.blocks[l];
    const float* mod = b.mod.data();
    std::fill(dmod.begin(), dmod.end(), 0.0f);
    // FFN half: h_out = h_mid + g2 * ffn_out.
    ops::GatedResidualBackward(dh.data(), b.ffn_out.data(), cu, hd, mod + 5 * hd, ld_mod,
                               dx_a.data(), dmod.data() + 5 * hd);
    ops::LinearBackward(b.ffn_act.data(), t_n, f, p + bo.w_ff2, hd, hd, dx_a.data(), hd,
                        g + bo.w_ff2, g + bo.b_ff2, dffn_a.data(), false);
    ops::GeluBackward(dffn_a.data(), b.ffn_pre.data(), t_n * f, dffn_b.data());
    ops::LinearBackward(b.mod2.data(), t_n, hd, p + bo.w_ff1, f, f, dffn_b.data(), f, g + bo.w_ff1,
                        g + bo.b_ff1, dx_a.data(), false);
    ops::ModulateBackward(dx_a.data(), b.norm2.data(), cu, hd, mod + 4 * hd, ld_mod, dx_b.data(),
                          dmod.data() + 3 * hd, dmod.data() + 4 * hd);
    ops::LayerNormBackward(dx_b.data(), b.norm2.data(), b.rstd2.data(), t_n, hd, dh.data(), true);
    // Attention half: h_mid = h_in + g1 * proj.
    ops::GatedResidualBackward(dh.data(), b.proj.data(), cu, hd, mod + 2 * hd, ld_mod, dx_a.data(),
                               dmod.data() + 2 * hd);
    ops::LinearBackward(b.attn.data(), t_n, hd, p + bo.w_o, hd, hd, dx_a.data(), hd, g + bo.w_o,
                        g + bo.b_o, dx_b.data(), false);
    RETURN_IF_ERROR(backend
                        .Backward(shape, b.q.data(), b.k.data(), b.v.data(), b.attn.data(),
                                  dx_b.data(), b.lse.data(), dq.data(), dk.data(), dv.data())
                        .WithPrefix("block " + std::to_string(l) + " attention backward"));
    const float* dqkv[3] = {dq.data(), dk.data(), dv.data()};
    for (int64_t i = 0; i < 3; ++i) {
      ops::LinearBackward(b.mod1.data(), t_n, hd, p + bo.w_qkv + i * hd, 3 * hd, hd, dqkv[i], hd,
                          g + bo.w_qkv + i * hd, g + bo.b_qkv + i * hd, dx_a.data(), i > 0);
    }
    ops::ModulateBackward(dx_a.data(), b.norm1.data(), cu, hd, mod + hd, ld_mod, dx_b.data(),
                          dmod.data(), dmod.data() + hd);
    ops::LayerNormBackward(dx_b.data(), b.norm1.data(), b.rstd1.data(), t_n, hd, dh.data(), true);
    ops::LinearBackward(acts.cond_act.data(), s_n, hd, p + bo.w_mod, ld_mod, ld_mod, dmod.data(),
                        ld_mod, g + bo.w_mod, g + bo.b_mod, dcond_act.data(), true);
  }

  // Patch embedding (the input needs no gradient).
  ops::LinearBackward(acts.latents.data(), t_n, cin, p + off_.w_in, hd, hd, dh.data(), hd,
                      g + off_.w_in, g + off_.b_in, nullptr, false);
  // Timestep MLP.
  std::vector<float>& ds_a = scratch_.ds_a;
  std::vector<float>& ds_b = scratch_.ds_b;
  ds_a.resize(s_n * hd);
  ds_b.resize(s_n * hd);
  ops::SiluBackward(dcond_act.data(), acts.cond.data(), s_n * hd, ds_a.data(), false);
  ops::LinearBackward(acts.t_act.data(), s_n, hd, p + off_.w_t2, hd, hd, ds_a.data(), hd,
                      g + off_.w_t2, g + off_.b_t2, ds_b.data(), false);
  ops::SiluBackward(ds_b.data(), acts.t_pre.data(), s_n * hd, ds_a.data(), false);
  ops::LinearBackward(acts.t_freq.data(), s_n, ft, p + off_.w_t1, hd, hd, ds_a.data(), hd,
                      g + off_.w_t1, g + off_.b_t1, nullptr, false);
  return Status::Ok();
}

}  // namespace tessera::models
