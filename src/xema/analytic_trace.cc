#include "xema/analytic_trace.h"

#include <algorithm>
#include <cmath>

#include "core/byte_size.h"
#include "core/parse_number.h"

namespace tessera::xema {
namespace {

constexpr double kBytesPerElement = 2.0;            // bf16
constexpr double kLaunchS = 5e-6;                   // one kernel launch (ffn chunks)
constexpr double kSms = 132;                        // H100 / H200 streaming multiprocessors
constexpr double kTileRows = 128, kTileCols = 256;  // one CTA's output tile
constexpr double kVaeTileOverlap = 1.5625;          // (1 + 2 x 1/8)^2: tile area with its overlap

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The share of the SMs' work slots a kernel of `tiles` CTAs fills: tiles / (waves x SMs).
double WaveEfficiency(double tiles) { return tiles / (std::ceil(tiles / kSms) * kSms); }
// A GEMM's output (m, n) cut into tiles.
double GemmTiles(double m, double n) { return std::ceil(m / kTileRows) * std::ceil(n / kTileCols); }

// Builds the trace: ops first (so template indices are known), then tensors.
class Builder {
 public:
  Builder(MemoryTrace* t) : t_(t) {}
  int Pro(int i) const { return i; }
  int Body(int i) const { return static_cast<int>(t_->prologue.size()) + i; }
  int Epi(int i) const { return static_cast<int>(t_->prologue.size() + t_->body.size()) + i; }

  // Adds a tensor of `bytes` (a double, checked against the trace bounds).
  TraceTensor& Add(const std::string& name, double bytes, Phase phase, TensorKind kind,
                   int alloc_op = 0, int free_op = 0) {
    TraceTensor x;
    x.id = static_cast<int64_t>(t_->tensors.size());
    x.name = name;
    if (!(bytes <= static_cast<double>(kMaxTensorBytes))) {
      if (error_.empty()) {
        error_ = "tensor '" + name + "' would be " + core::ShowNumber(bytes) +
                 " bytes, must be <= " + core::FormatBytes(kMaxTensorBytes) +
                 "; choose a smaller size or fewer frames";
      }
      bytes = 1;
    }
    x.bytes = AlignBytes(std::max<int64_t>(1, std::llround(bytes)));
    x.phase = phase;
    x.kind = kind;
    x.alloc_op = alloc_op;
    x.free_op = free_op;
    t_->tensors.push_back(x);
    return t_->tensors.back();
  }
  const std::string& error() const { return error_; }

 private:
  MemoryTrace* t_;
  std::string error_;
};

// An op timed at the request's achieved rate (its wave efficiency is applied by the caller).
TraceOp Op(const AnalyticRequest& r, std::string name, Phase phase, double flops, double bytes) {
  return {std::move(name), phase, flops, bytes, flops / r.flops_per_s};
}

}  // namespace

namespace {

// The sizes of one request that its ops and tensors are built from (see the file comment).
struct RequestSizes {
  bool cfg = false;
  double k_req = 1;  // requests in the pass
  // Sequences of the DiT (x2 under classifier-free guidance) and prompts the encoder runs (the
  // negative prompt once for the batch).
  double b = 1, b_enc = 1;
  double e = kBytesPerElement;
  int64_t latent_frames = 1;
  double tokens = 0;        // video tokens + text tokens in attention
  double sp = 1;            // SP degree
  double rows = 0;          // this member's rows of the joint sequence
  double latent_bytes = 0;  // of the batch's k latents
  int blocks = 0;
  double te = 0;                  // encoder tokens
  double enc_layer_params = 0;    // parameters of one encoder layer
  double block_params = 0;        // parameters of one DiT block
  double d = 0;                   // DiT hidden
  double x_bytes = 0;             // one (rows, hidden) activation of this member
  std::vector<double> vae_elems;  // output elements per VAE up block (one request)
};

// InvalidArgument (prefixed with `who`) for a request the model cannot serve.
core::Status CheckRequest(const AnalyticRequest& r, const AnalyticModel& m,
                          const std::string& who) {
  if (r.width < 16 || r.height < 16 || r.width > 16384 || r.height > 16384 ||
      r.width % m.pixels_per_token != 0 || r.height % m.pixels_per_token != 0) {
    return core::InvalidArgument(who + "size: got " + std::to_string(r.width) + "x" +
                                 std::to_string(r.height) + ", each side must be a multiple of " +
                                 std::to_string(m.pixels_per_token) + " in [16, 16384]");
  }
  if (m.frame_div == 1 && r.frames != 1) {
    return core::InvalidArgument(who + "frames: got " + std::to_string(r.frames) +
                                 ", must be 1 (an image model)");
  }
  if (m.frame_div > 1 && (r.frames < 1 || r.frames > 1025 || (r.frames - 1) % m.frame_div != 0)) {
    return core::InvalidArgument(who + "frames: got " + std::to_string(r.frames) + ", must be " +
                                 std::to_string(m.frame_div) + "k+1 in [1, 1025]");
  }
  if (r.steps < 1 || r.steps > kMaxSteps) {
    return core::InvalidArgument(who + "steps: got " + std::to_string(r.steps) +
                                 ", must be in [1, " + std::to_string(kMaxSteps) + "]");
  }
  if (r.sp_degree < 1 || r.sp_degree > 64 || m.heads % r.sp_degree != 0) {
    return core::InvalidArgument(who + "sp_degree: got " + std::to_string(r.sp_degree) +
                                 ", must be in [1, 64] and divide the " + std::to_string(m.heads) +
                                 " attention heads");
  }
  if (r.ffn_chunks < 1 || r.ffn_chunks > 4096) {
    return core::InvalidArgument(who + "ffn_chunks: got " + std::to_string(r.ffn_chunks) +
                                 ", must be in [1, 4096]");
  }
  if (r.vae_tiles < 1 || r.vae_tiles > 64) {
    return core::InvalidArgument(who + "vae_tiles: got " + std::to_string(r.vae_tiles) +
                                 ", must be in [1, 64]");
  }
  if (r.batch < 1 || r.batch > 64) {
    return core::InvalidArgument(who + "batch: got " + std::to_string(r.batch) +
                                 ", must be in [1, 64]");
  }
  if (!(r.link_bytes_per_s > 0) || !std::isfinite(r.link_bytes_per_s) ||
      !(r.host_bytes_per_s > 0) || !std::isfinite(r.host_bytes_per_s) || !(r.flops_per_s > 0) ||
      !std::isfinite(r.flops_per_s)) {
    return core::InvalidArgument(who + "link_bytes_per_s " + core::ShowNumber(r.link_bytes_per_s) +
                                 ", host_bytes_per_s " + core::ShowNumber(r.host_bytes_per_s) +
                                 ", flops_per_s " + core::ShowNumber(r.flops_per_s) +
                                 ": must be finite and > 0");
  }
  return core::Status::Ok();
}

RequestSizes SizesOf(const AnalyticRequest& r, const AnalyticModel& m) {
  RequestSizes z;
  z.cfg = r.cfg < 0 ? m.default_cfg : r.cfg != 0;
  z.k_req = static_cast<double>(r.batch);
  z.b = (z.cfg ? 2.0 : 1.0) * z.k_req;
  z.b_enc = z.k_req + (z.cfg ? 1.0 : 0.0);
  const double e = z.e;
  z.latent_frames = (r.frames - 1) / m.frame_div + 1;
  const double video_tokens = static_cast<double>(z.latent_frames) *
                              static_cast<double>(r.width / m.pixels_per_token) *
                              static_cast<double>(r.height / m.pixels_per_token);
  z.tokens = video_tokens + static_cast<double>(m.text_tokens_in_attention);
  z.sp = static_cast<double>(r.sp_degree);
  z.rows = std::ceil(z.tokens / z.sp);
  z.latent_bytes = static_cast<double>(m.latent_channels) *
                   static_cast<double>(r.width / m.vae_spatial) *
                   static_cast<double>(r.height / m.vae_spatial) *
                   static_cast<double>(z.latent_frames) * e * z.k_req;
  z.blocks = m.double_blocks + m.single_blocks;
  z.te = static_cast<double>(m.enc_tokens);
  z.enc_layer_params = m.enc_params / m.enc_layers;
  z.block_params = 0.97 * m.dit_params / z.blocks;
  z.d = static_cast<double>(m.hidden);
  z.x_bytes = z.rows * z.d * e * z.b;
  for (const VaeUpBlock& v : m.vae) {
    z.vae_elems.push_back(static_cast<double>(v.channels) *
                          static_cast<double>(r.width / v.spatial_div) *
                          static_cast<double>(r.height / v.spatial_div) *
                          static_cast<double>(CeilDiv(r.frames, v.time_div)));
  }
  return z;
}

// The VAE's ops of request j of the batch: "vae.up<i>" for j = 0, "vae<j>.up<i>" after.
std::string VaeOpName(int64_t j, size_t i) {
  return (j == 0 ? std::string("vae") : "vae" + std::to_string(j)) + ".up" + std::to_string(i);
}

// Prologue: one op per encoder layer (streamed from the host when encoder_on_host), the
// prompt pooling and the latent init.
void AddPrologueOps(const AnalyticRequest& r, const AnalyticModel& m, const RequestSizes& z,
                    MemoryTrace* t) {
  const double e = z.e;
  const double stream_s = z.enc_layer_params * e / r.host_bytes_per_s;
  for (int i = 0; i < m.enc_layers; ++i) {
    t->prologue.push_back(Op(r, "text.l" + std::to_string(i), Phase::kText,
                             2 * z.enc_layer_params * z.te * z.b_enc, z.enc_layer_params * e));
    TraceOp& op = t->prologue.back();
    if (r.encoder_on_host)
      op.time_s = i == 0 ? op.time_s + stream_s : std::max(op.time_s, stream_s);
  }
  t->prologue.push_back(Op(r, "text.pool", Phase::kText, 0, z.te * m.enc_hidden * e * z.b_enc));
  t->prologue.push_back(Op(r, "latent.init", Phase::kDenoise, 0, z.latent_bytes));
}

// Body: dit.embed, one op per block (timed by its wave efficiency, all-to-alls and chunk
// launches), dit.final and sched.step.
void AddBodyOps(const AnalyticRequest& r, const AnalyticModel& m, const RequestSizes& z,
                MemoryTrace* t) {
  const double d = z.d, sp = z.sp, rows = z.rows, b = z.b, tokens = z.tokens;
  const double block_params = z.block_params, x_bytes = z.x_bytes;
  const double a2a_s = 4 * x_bytes * (sp - 1) / sp / r.link_bytes_per_s;
  const double chunk_s = static_cast<double>(r.ffn_chunks - 1) * 3 * kLaunchS;
  // GPU fill (wave quantization): the block's GEMMs over this member's rows (the MLP's over one
  // chunk of them), attention over (batch x heads / d) x 128-query tiles.
  const double mlp_share = std::min(1.0, 2.0 * d * static_cast<double>(m.ffn) * 2 / block_params);
  const double eff_linear = WaveEfficiency(GemmTiles(rows * b, d));
  const double eff_mlp = WaveEfficiency(GemmTiles(
      std::ceil(rows * b / static_cast<double>(r.ffn_chunks)), static_cast<double>(m.ffn)));
  const double eff_attention =
      WaveEfficiency(b * static_cast<double>(m.heads) / sp * std::ceil(tokens / kTileRows));
  t->body.push_back(
      Op(r, "dit.embed", Phase::kDenoise, 2 * 0.03 * m.dit_params * rows * b, x_bytes));
  for (int i = 0; i < z.blocks; ++i) {
    const std::string name = i < m.double_blocks
                                 ? "dit.double" + std::to_string(i)
                                 : "dit.block" + std::to_string(i - m.double_blocks);
    const double linear = 2 * block_params * tokens * b / sp;
    const double attention = 4 * tokens * tokens * d * b / sp;
    t->body.push_back(
        Op(r, name, Phase::kDenoise, linear + attention, block_params * z.e + 4 * x_bytes));
    t->body.back().time_s = linear * (1 - mlp_share) / (r.flops_per_s * eff_linear) +
                            linear * mlp_share / (r.flops_per_s * eff_mlp) +
                            attention / (r.flops_per_s * eff_attention) + a2a_s + chunk_s;
  }
  t->body.push_back(
      Op(r, "dit.final", Phase::kDenoise, 2 * rows * d * m.latent_channels * b, x_bytes));
  t->body.push_back(
      Op(r, "sched.step", Phase::kDenoise, 3 * z.latent_bytes / z.e, 3 * z.latent_bytes));
}

// Epilogue: the VAE's up blocks, request after request.
void AddEpilogueOps(const AnalyticRequest& r, const AnalyticModel& m, const RequestSizes& z,
                    MemoryTrace* t) {
  const double recompute = r.vae_tiles > 1 ? kVaeTileOverlap : 1.0;
  for (int64_t j = 0; j < r.batch; ++j) {
    for (size_t i = 0; i < m.vae.size(); ++i) {
      t->epilogue.push_back(
          Op(r, VaeOpName(j, i), Phase::kVae,
             2 * 2 * 9 * static_cast<double>(m.vae[i].channels) * z.vae_elems[i] * recompute,
             3 * z.vae_elems[i] * z.e * recompute));
    }
  }
}

// Weights (resident for the request) and the prologue's tensors: the encoder's layers, then the
// prompt embedding and the initial noise.
void AddWeightsAndPrologueTensors(const AnalyticRequest& r, const AnalyticModel& m,
                                  const RequestSizes& z, const MemoryTrace& t, Builder& bld) {
  const double e = z.e, te = z.te, b_enc = z.b_enc, enc_layer_params = z.enc_layer_params;
  for (int i = 0; i < m.enc_layers && !r.encoder_on_host; ++i)
    bld.Add("text.l" + std::to_string(i) + ".w", enc_layer_params * e, Phase::kText,
            TensorKind::kWeight);
  bld.Add("dit.embeddings.w", 0.03 * m.dit_params * e, Phase::kDenoise, TensorKind::kWeight);
  for (int i = 0; i < z.blocks; ++i)
    bld.Add(t.body[1 + i].name + ".w", z.block_params * e, Phase::kDenoise, TensorKind::kWeight);
  bld.Add("vae.decoder.w", m.vae_params * e, Phase::kVae, TensorKind::kWeight);
  const int pool_op = m.enc_layers, init_op = m.enc_layers + 1;
  for (int i = 0; i < m.enc_layers; ++i) {
    const std::string l = "text.l" + std::to_string(i);
    if (r.encoder_on_host) {  // prefetched during the previous layer
      bld.Add(l + ".w.stream", enc_layer_params * e, Phase::kText, TensorKind::kWorkspace,
              bld.Pro(std::max(0, i - 1)), bld.Pro(i));
    }
    bld.Add(l + ".qkv", 3 * te * m.enc_hidden * e * b_enc, Phase::kText, TensorKind::kWorkspace,
            bld.Pro(i), bld.Pro(i));
    bld.Add(l + ".ffn", te * m.enc_ffn * e * b_enc, Phase::kText, TensorKind::kActivation,
            bld.Pro(i), bld.Pro(i));
    bld.Add(l + ".out", te * m.enc_hidden * e * b_enc, Phase::kText, TensorKind::kActivation,
            bld.Pro(i), bld.Pro(i + 1));
  }
  const int sched = bld.Body(z.blocks + 2);
  bld.Add("text.prompt_emb", te * m.enc_hidden * e * b_enc, Phase::kText, TensorKind::kActivation,
          bld.Pro(pool_op),
          sched);  // read by every step: freed in the last one
  bld.Add("latent.noise", z.latent_bytes, Phase::kDenoise, TensorKind::kActivation,
          bld.Pro(init_op), sched)
      .free_step = 0;  // replaced by the first step's next latent
}

// The body's tensors (one denoising step) and the epilogue's (VAE up blocks, request after
// request).
void AddStepAndDecodeTensors(const AnalyticRequest& r, const AnalyticModel& m,
                             const RequestSizes& z, const MemoryTrace& t, Builder& bld) {
  const double e = z.e, x_bytes = z.x_bytes, rows = z.rows, b = z.b, sp = z.sp;
  const double tokens = z.tokens;
  const int sched = bld.Body(z.blocks + 2);
  bld.Add("dit.tokens", x_bytes, Phase::kDenoise, TensorKind::kActivation, bld.Body(0),
          bld.Body(1));
  for (int i = 0; i < z.blocks; ++i) {
    const int op = bld.Body(1 + i);
    const std::string& n = t.body[1 + i].name;
    bld.Add(n + ".qkv", 3 * x_bytes, Phase::kDenoise, TensorKind::kActivation, op, op);
    if (r.sp_degree > 1) {
      bld.Add(n + ".qkv_heads", 3 * x_bytes, Phase::kDenoise, TensorKind::kActivation, op, op);
    }
    bld.Add(n + ".attn", x_bytes, Phase::kDenoise, TensorKind::kActivation, op, op);
    if (!r.fused_attention) {
      bld.Add(n + ".scores", static_cast<double>(m.heads) / sp * tokens * tokens * e * b,
              Phase::kDenoise, TensorKind::kActivation, op, op);
    }
    bld.Add(
        n + ".mlp",
        std::ceil(rows * b / static_cast<double>(r.ffn_chunks)) * static_cast<double>(m.ffn) * e,
        Phase::kDenoise, TensorKind::kActivation, op, op);
    bld.Add(n + ".out", x_bytes, Phase::kDenoise, TensorKind::kActivation, op, op + 1);
  }
  bld.Add("dit.velocity", z.latent_bytes * b / z.k_req, Phase::kDenoise, TensorKind::kActivation,
          bld.Body(z.blocks + 1), sched);
  TraceTensor& next = bld.Add("latent.next", z.latent_bytes, Phase::kDenoise,
                              TensorKind::kActivation, sched, sched);
  next.free_next_step = true;  // the next step's latent, replaced by the step after
  // The latents stay until the last request's decode starts.
  const int vae_ops = static_cast<int>(m.vae.size());
  next.last_free_op = bld.Epi(static_cast<int>(r.batch - 1) * vae_ops);
  for (int64_t j = 0; j < r.batch; ++j) {
    for (size_t i = 0; i < m.vae.size(); ++i) {
      const int op = bld.Epi(static_cast<int>(j) * vae_ops + static_cast<int>(i));
      const std::string n = VaeOpName(j, i);
      const bool last = i + 1 == m.vae.size();
      // Tiled: every intermediate holds one tile with its overlap; the output is full size.
      const double tile =
          r.vae_tiles > 1 ? kVaeTileOverlap / static_cast<double>(r.vae_tiles * r.vae_tiles) : 1.0;
      bld.Add(n + ".tmp", 2 * z.vae_elems[i] * e * tile, Phase::kVae, TensorKind::kWorkspace, op,
              op);
      const int free_op = last ? op : op + 1;
      bld.Add(n + ".out", z.vae_elems[i] * e * (last ? 1.0 : tile), Phase::kVae,
              TensorKind::kActivation, op, free_op);
    }
  }
}

}  // namespace

core::StatusOr<std::pair<int64_t, int64_t>> ParseImageSize(const std::string& text) {
  const std::string bad = "size: got '" + text + "', must be WIDTHxHEIGHT with each in [16, 16384]";
  const size_t x = text.find('x');
  // Digits and one 'x' only: ParseInteger alone would take "+1024x+1024".
  if (x == std::string::npos || text.find_first_not_of("0123456789x") != std::string::npos) {
    return core::InvalidArgument(bad);
  }
  auto w = core::ParseInteger(text.substr(0, x), 16, 16384);
  auto h = core::ParseInteger(text.substr(x + 1), 16, 16384);
  if (!w.ok() || !h.ok()) return core::InvalidArgument(bad);
  return std::make_pair(*w, *h);
}

core::StatusOr<AnalyticModelInfo> FindAnalyticModel(const std::string& model) {
  ASSIGN_OR_RETURN(const AnalyticModel* m, LoadAnalyticModel(model));
  return AnalyticModelInfo{m->heads, m->default_cfg, m->frame_div > 1};
}

core::StatusOr<MemoryTrace> AnalyticTrace(const AnalyticRequest& r) {
  auto spec = LoadAnalyticModel(r.model);
  if (spec.status().code() == core::StatusCode::kNotFound) {
    std::string names;
    for (const std::string& n : AnalyticModelNames()) names += (names.empty() ? "" : ", ") + n;
    return core::InvalidArgument("analytic: got '" + r.model + "', must be one of " + names);
  }
  if (!spec.ok()) return spec.status();
  const AnalyticModel& m = **spec;
  const std::string who = "analytic " + r.model + ": ";
  RETURN_IF_ERROR(CheckRequest(r, m, who));
  const RequestSizes z = SizesOf(r, m);

  MemoryTrace t;
  t.provenance = "modeled";
  t.key.model = m.name;
  t.key.width = r.width;
  t.key.height = r.height;
  t.key.frames = r.frames;
  t.key.steps = r.steps;
  t.key.cfg = z.cfg;
  t.key.sp_degree = r.sp_degree;
  t.key.batch = r.batch;
  t.key.dtype = "bf16";
  // Ops first, so that template op indices are known; then the tensors.
  AddPrologueOps(r, m, z, &t);
  AddBodyOps(r, m, z, &t);
  AddEpilogueOps(r, m, z, &t);
  Builder bld(&t);
  AddWeightsAndPrologueTensors(r, m, z, t, bld);
  AddStepAndDecodeTensors(r, m, z, t, bld);
  if (!bld.error().empty()) return core::InvalidArgument(who + bld.error());
  core::Status st = Validate(t);
  if (!st.ok()) return st.WithPrefix("analytic " + r.model);
  return t;
}

}  // namespace tessera::xema
