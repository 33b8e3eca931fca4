#include "xema/pipeline/tiny_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "core/rng.h"
#include "models/vae_tiling.h"
#include "runtime/op_scope.h"
#include "xema/pipeline/activation_offload.h"

namespace tessera::xema {
namespace {

// The request's latent geometry.
struct Geometry {
  int64_t latent_height, latent_width;  // latent pixels
  int64_t grid_height, grid_width;      // DiT patches per latent frame
  int64_t latent_frames;
  int64_t tokens;  // N
};

Geometry GeometryOf(const TinyModelSpec& spec, const DiffusionRequest& r) {
  Geometry g{};
  g.latent_height = r.height / spec.spatial_factor;
  g.latent_width = r.width / spec.spatial_factor;
  g.grid_height = g.latent_height / spec.patch;
  g.grid_width = g.latent_width / spec.patch;
  g.latent_frames = (r.frames - 1) / spec.temporal_factor + 1;
  g.tokens = g.latent_frames * g.grid_height * g.grid_width;
  return g;
}

// Hands the weights being restored back to their owners when Run returns, on every path.
class RestoreOnExit {
 public:
  explicit RestoreOnExit(WeightParking* parking) : parking_(parking) {}
  ~RestoreOnExit() {
    if (parking_ != nullptr) parking_->FinishRestoreAll();
  }
  RestoreOnExit(const RestoreOnExit&) = delete;
  RestoreOnExit& operator=(const RestoreOnExit&) = delete;

 private:
  WeightParking* parking_;
};

// What differs between the requests of a batch: request 0 is the request itself, request j >=
// 1 its batch mate j - 1.
struct BatchMember {
  const std::string* prompt;
  uint64_t seed;
  float guidance;
};
BatchMember MemberOf(const DiffusionRequest& r, int64_t j) {
  if (j == 0) return {&r.prompt, r.seed, r.guidance};
  const BatchMate& m = r.batch_mates[static_cast<size_t>(j - 1)];
  return {&m.prompt, m.seed, m.guidance};
}
// The op (and tensor) name group of request j of a batch: `base` for j = 0, base + j after.
std::string BatchName(const char* base, int64_t j) {
  return j == 0 ? std::string(base) : fmt::format("{}{}", base, j);
}

// out (Lf, C, h, w) := the patchified latent x (N, C_in) (see tiny_pipeline.h).
void Unpatchify(const Geometry& g, int64_t lc, int64_t p, const float* xs, float* out) {
  const int64_t cin = lc * p * p;
  for (int64_t f = 0; f < g.latent_frames; ++f) {
    for (int64_t gy = 0; gy < g.grid_height; ++gy) {
      for (int64_t gx = 0; gx < g.grid_width; ++gx) {
        const float* token = xs + ((f * g.grid_height + gy) * g.grid_width + gx) * cin;
        for (int64_t c = 0; c < lc; ++c) {
          for (int64_t py = 0; py < p; ++py) {
            for (int64_t px = 0; px < p; ++px) {
              const int64_t y = gy * p + py, xx = gx * p + px;
              out[((f * lc + c) * g.latent_height + y) * g.latent_width + xx] =
                  token[(c * p + py) * p + px];
            }
          }
        }
      }
    }
  }
}

}  // namespace

DiffusionPipeline::DiffusionPipeline(const TinyModelSpec& spec, runtime::DeviceAllocator& allocator,
                                     models::TextEncoder text, models::TinyDit dit,
                                     models::VaeDecoder vae)
    : spec_(spec),
      allocator_(allocator),
      text_(std::move(text)),
      dit_(std::move(dit)),
      vae_(std::move(vae)) {
  weight_bytes_ = text_.WeightBytes() + dit_.WeightBytes() + vae_.WeightBytes();
}

DiffusionPipeline::~DiffusionPipeline() = default;

core::StatusOr<std::unique_ptr<DiffusionPipeline>> DiffusionPipeline::Load(
    const TinyModelSpec& spec, runtime::DeviceAllocator& allocator, HostTier* host) {
  RETURN_IF_ERROR(ValidateSpec(spec));
  ASSIGN_OR_RETURN(models::TextEncoder text,
                   models::TextEncoder::Create(spec.text, spec.seed, allocator));
  models::SmallDitConfig dit_config = spec.dit;
  dit_config.init_seed = spec.seed;
  const uint64_t text_seed = core::Rng(spec.seed).Fork(0xd17).NextU64();
  ASSIGN_OR_RETURN(models::TinyDit dit,
                   models::TinyDit::Create(dit_config, spec.text.hidden, text_seed, allocator));
  ASSIGN_OR_RETURN(models::VaeDecoder vae,
                   models::VaeDecoder::Create(spec.vae, spec.seed, allocator));
  std::unique_ptr<DiffusionPipeline> p(
      new DiffusionPipeline(spec, allocator, std::move(text), std::move(dit), std::move(vae)));
  if (host != nullptr) {
    std::array<std::vector<WeightParking::Slot>, WeightParking::kGroups> groups;
    const std::vector<runtime::DeviceTensor*> text_weights = p->text_.WeightTensors();
    for (size_t l = 0; l < text_weights.size(); ++l) {
      const std::string name = l == 0 ? "text.embed" : fmt::format("text.layer{}", l - 1);
      groups[WeightParking::kTextEncoder].push_back({name, text_weights[l]});
    }
    groups[WeightParking::kDitText].push_back({"dit.text", &p->dit_.text_tensor()});
    groups[WeightParking::kDitParams].push_back({"dit.params", &p->dit_.params_tensor()});
    ASSIGN_OR_RETURN(WeightParking parking, WeightParking::Create(*host, std::move(groups)));
    p->parking_ = std::make_unique<WeightParking>(std::move(parking));
    p->host_ = host;
  }
  return p;
}

bool* OffloadFlag(OffloadSet& set, std::string_view name) {
  return name == "text"      ? &set.text_context
         : name == "latent"  ? &set.latent
         : name == "image"   ? &set.image
         : name == "weights" ? &set.idle_weights
                             : nullptr;
}

int64_t DiffusionPipeline::WeightBytes() const { return weight_bytes_; }

int64_t DiffusionPipeline::ParkedWeightBytes() const {
  return parking_ ? parking_->ParkedBytes() : 0;
}

namespace {

// Run's argument checks, in order: the request, offload with SP, the output's size for this
// member, offload without a host tier, idle weights with a separate activation allocator.
core::Status CheckRun(const TinyModelSpec& spec, const DiffusionRequest& r,
                      std::span<const float> output, const SpMember* sp, bool has_host,
                      bool separate_activations) {
  RETURN_IF_ERROR(ValidateRequest(spec, r));
  const bool spread = sp != nullptr && sp->degree() > 1;
  const bool decodes = !spread || sp->member == 0;  // runs the VAE and writes the output
  if (spread && r.offload.any()) {
    return core::InvalidArgument(
        "request.offload: not with sequence parallelism (sp degree > 1); clear the offload set");
  }
  if (!decodes && !output.empty()) {
    return core::InvalidArgument(fmt::format(
        "output: got {} floats on sp member {}, only member 0 decodes: pass an empty output",
        output.size(), sp->member));
  }
  const int64_t k = RequestBatch(r);  // requests in the batch
  if (decodes && static_cast<int64_t>(output.size()) != OutputFloats(r)) {
    const char* need =
        k > 1 ? "batch * frames * 3 * height * width" : "frames * 3 * height * width";
    return core::InvalidArgument(
        fmt::format("output: got {} floats, need {} = {}", output.size(), need, OutputFloats(r)));
  }
  if (r.offload.any() && !has_host) {
    return core::InvalidArgument(
        "request.offload: parking tensors in host memory needs a host tier; load the pipeline "
        "with one (DiffusionPipeline::Load(spec, allocator, host)) or clear the offload set");
  }
  if (separate_activations && r.offload.idle_weights) {
    return core::InvalidArgument(
        "request.offload.idle_weights: parking weights needs the weights and the activations in "
        "one allocator; run without a separate activation allocator or clear idle_weights");
  }
  return core::Status::Ok();
}

// One Run: the request, where its tensors go, the pipeline's parts and the sizes every phase
// uses. The tensors that cross ops (text_ctx, pool_ctx, x) belong to Run, which passes them.
struct RunState {
  const DiffusionRequest& r;
  const TinyModelSpec& spec;
  runtime::DeviceAllocator& act;  // every tensor and op of the request
  ActivationOffload& off;
  models::TextEncoder& text;
  models::TinyDit& dit;
  models::VaeDecoder& vae;
  WeightParking* parking;  // null without a host tier
  Geometry g;
  int64_t k;            // requests in the batch
  int64_t batch;        // DiT sequences, (cfg ? 2 : 1) * k
  int64_t latent_size;  // floats of one request's latent
  double latent_floats, all_latent_floats;
};

// Prologue, text encoding: each request's prompt (and the empty prompt once with cfg), then
// the projection for the DiT over the sequences [cond_0 .. cond_{k-1}, uncond x k].
core::Status EncodePrompts(const RunState& s, runtime::DeviceTensor* text_ctx,
                           runtime::DeviceTensor* pool_ctx) {
  const DiffusionRequest& r = s.r;
  const int64_t k = s.k;
  const runtime::OpContext text_op{PhaseName(Phase::kText), Section::kPrologue, -1};
  // tokens[j], pooled[j]: request j's prompt; index k: the empty prompt (cfg).
  std::array<runtime::DeviceTensor, kMaxRequestBatch + 1> tokens, pooled;
  for (int64_t j = 0; j < k; ++j) {
    RETURN_IF_ERROR(s.text.Encode(s.act, *MemberOf(r, j).prompt, BatchName("text.cond", j), text_op,
                                  &tokens[j], &pooled[j]));
  }
  if (r.cfg) {
    RETURN_IF_ERROR(s.text.Encode(s.act, "", "text.uncond", text_op, &tokens[k], &pooled[k]));
  }
  runtime::OpScope op(s.act, "dit.text_proj", text_op);
  std::array<const float*, models::kMaxDitBatch> text_ptrs{}, pool_ptrs{};
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t e = b < k ? b : k;  // the uncond sequences share the one encoding
    text_ptrs[b] = tokens[e].f32();
    pool_ptrs[b] = pooled[e].f32();
  }
  double flops = 0;
  RETURN_IF_ERROR(s.dit.ProjectText(
      s.act, std::span<const float* const>(text_ptrs.data(), static_cast<size_t>(s.batch)),
      std::span<const float* const>(pool_ptrs.data(), static_cast<size_t>(s.batch)),
      s.spec.text.tokens, text_ctx, pool_ctx, &flops));
  for (int64_t e = 0; e < k + (r.cfg ? 1 : 0); ++e) {
    tokens[e].Reset();
    pooled[e].Reset();
  }
  if (r.offload.idle_weights) s.parking->Park(WeightParking::kTextEncoder);
  op.Count(flops);
  return core::Status::Ok();
}

// Prologue, initial noise: *x := each request's noise as if it ran alone.
core::Status InitLatent(const RunState& s, runtime::DeviceTensor* x) {
  runtime::OpScope op(s.act, "latent.init", {PhaseName(Phase::kDenoise), Section::kPrologue, -1});
  ASSIGN_OR_RETURN(*x, s.act.AllocateF32(s.k * s.latent_size, "latent.x", TensorKind::kActivation));
  for (int64_t j = 0; j < s.k; ++j) {  // request j's noise as if it ran alone
    core::Rng rng(MemberOf(s.r, j).seed);
    float* xj = x->f32() + j * s.latent_size;
    for (int64_t i = 0; i < s.latent_size; ++i) xj[i] = static_cast<float>(rng.Normal());
  }
  if (s.r.offload.idle_weights) s.parking->Park(WeightParking::kDitText);
  op.Count(0, 4.0 * s.all_latent_floats);
  return core::Status::Ok();
}

// Body, step i (identical ops and allocations in every step): the DiT's velocity (over the
// SP group when `sp` spreads it), the cfg combination, the Euler step to *x.
core::Status DenoiseStep(const RunState& s, const models::DitExecution& execution,
                         const SpMember* sp, int64_t i, runtime::DeviceTensor* text_ctx,
                         runtime::DeviceTensor* pool_ctx, runtime::DeviceTensor* x) {
  const DiffusionRequest& r = s.r;
  const int64_t k = s.k, latent_size = s.latent_size;
  ActivationOffload& off = s.off;
  const bool spread = sp != nullptr && sp->degree() > 1;
  const runtime::OpContext body{PhaseName(Phase::kDenoise), Section::kBody, static_cast<int>(i)};
  const double steps = static_cast<double>(r.steps);
  const float t = static_cast<float>(1.0 - static_cast<double>(i) / steps);
  const float t_next = static_cast<float>(1.0 - static_cast<double>(i + 1) / steps);
  if (i == 0 && s.parking != nullptr) s.parking->FinishRestore(WeightParking::kDitParams);
  off.BeforeDit(i);
  models::TinyDit::Input in;
  in.latent = off.latent(*x);
  in.image_tokens = s.g.tokens;
  in.t = t;
  in.batch = s.batch;
  in.latents = k;  // sequence b reads request b % k's latent
  in.text_ctx = off.text_ctx(text_ctx);
  in.text_tokens = s.spec.text.tokens;
  in.pool_ctx = off.pool_ctx(pool_ctx);
  in.release_context = i == r.steps - 1 && !r.offload.text_context;
  in.after_embed = off.EmbedHook();
  ASSIGN_OR_RETURN(
      runtime::DeviceTensor v,
      spread ? SequenceParallelForward(s.dit, s.act, sp->group, sp->member, in, execution, body)
             : s.dit.Forward(s.act, in, execution, body));
  if (r.cfg) {
    runtime::OpScope op(s.act, "cfg.combine", body);
    RETURN_IF_ERROR(off.AfterDit(i));
    ASSIGN_OR_RETURN(runtime::DeviceTensor guided,
                     s.act.AllocateF32(k * latent_size, "cfg.v", TensorKind::kActivation));
    for (int64_t j = 0; j < k; ++j) {  // request j: cond at sequence j, uncond at k + j
      const float w = MemberOf(r, j).guidance;
      const float* vc = v.f32() + j * latent_size;
      const float* vu = v.f32() + (k + j) * latent_size;
      float* gj = guided.f32() + j * latent_size;
      for (int64_t e = 0; e < latent_size; ++e) gj[e] = vu[e] + w * (vc[e] - vu[e]);
    }
    v = std::move(guided);  // frees the (2k, N, C_in) prediction
    op.Count(3.0 * s.all_latent_floats, 12.0 * s.all_latent_floats);
  }
  runtime::OpScope op(s.act, "euler.step", body);
  if (!r.cfg) RETURN_IF_ERROR(off.AfterDit(i));
  ASSIGN_OR_RETURN(runtime::DeviceTensor next,
                   s.act.AllocateF32(k * latent_size, "latent.x", TensorKind::kActivation));
  const float dt = t_next - t;
  const float* xi = off.LatentForStep(*x);
  for (int64_t j = 0; j < k * latent_size; ++j) next.f32()[j] = xi[j] + dt * v.f32()[j];
  *x = std::move(next);  // frees x_i
  off.DropLatent();      // or its copy brought back from the host
  v.Reset();
  RETURN_IF_ERROR(off.LatentReady(x, i + 1));
  op.Count(2.0 * s.all_latent_floats, 12.0 * s.all_latent_floats);
  return core::Status::Ok();
}

// Epilogue, request j of the batch: unpatchify its latent from *x (the last request frees
// *x), VAE decode, copy its frames into its part of `output`.
core::Status DecodeRequest(const RunState& s, int64_t j, std::span<float> output,
                           runtime::DeviceTensor* x) {
  const DiffusionRequest& r = s.r;
  const Geometry& g = s.g;
  const runtime::OpContext epi{PhaseName(Phase::kVae), Section::kEpilogue, -1};
  const int64_t frame_floats = s.spec.vae.out_channels * r.height * r.width;
  const int64_t request_floats = r.frames * frame_floats;
  const bool last = j == s.k - 1;
  const std::string vae_name = BatchName("vae", j);
  runtime::DeviceTensor latent;
  {
    runtime::OpScope op(s.act, vae_name + ".unpatchify", epi);
    ASSIGN_OR_RETURN(latent, s.act.AllocateF32(g.latent_frames * s.spec.latent_channels *
                                                   g.latent_height * g.latent_width,
                                               vae_name + ".latent", TensorKind::kActivation));
    Unpatchify(g, s.spec.latent_channels, s.spec.patch, x->f32() + j * s.latent_size, latent.f32());
    if (last) {
      x->Reset();
      s.off.InUnpatchify();
      if (r.offload.idle_weights) s.parking->Park(WeightParking::kDitParams);
    }
    op.Count(0, 8.0 * s.latent_floats);
  }
  models::VaeGeometry vg;
  vg.latent_frames = g.latent_frames;
  vg.latent_height = g.latent_height;
  vg.latent_width = g.latent_width;
  vg.frames = r.frames;
  vg.temporal_factor = s.spec.temporal_factor;
  vg.slices = r.vae_frame_slices;
  vg.tiles = r.vae_tiles;
  vg.name = vae_name;
  ASSIGN_OR_RETURN(runtime::DeviceTensor image,
                   s.vae.Decode(s.act, std::move(latent), vg, epi, s.off.FrameSink(frame_floats)));
  runtime::OpScope op(s.act, vae_name + ".output", epi);
  const std::span<float> out_j =
      output.subspan(static_cast<size_t>(j * request_floats), static_cast<size_t>(request_floats));
  if (r.offload.image) {
    s.off.GatherFrames(out_j);  // the frames are on the host already
  } else {
    std::copy(image.f32(), image.f32() + out_j.size(), out_j.begin());
  }
  image.Reset();
  op.Count(0, 8.0 * static_cast<double>(out_j.size()));
  return core::Status::Ok();
}

}  // namespace

core::Status DiffusionPipeline::Run(const DiffusionRequest& r, std::span<float> output,
                                    runtime::DeviceAllocator* activations, const SpMember* sp) {
  RETURN_IF_ERROR(CheckRun(spec_, r, output, sp, host_ != nullptr,
                           activations != nullptr && activations != &allocator_));
  const bool spread = sp != nullptr && sp->degree() > 1;
  const bool decodes = !spread || sp->member == 0;  // runs the VAE and writes the output
  // Every tensor and op of the request goes here; the weights stay where Load put them.
  runtime::DeviceAllocator& act = activations != nullptr ? *activations : allocator_;
  // Weights parked by the previous request come back first (outside ops: they are weights).
  RestoreOnExit restore_on_exit(parking_.get());
  if (parking_ != nullptr) {
    RETURN_IF_ERROR(parking_->StartRestore(allocator_));
    parking_->FinishRestore(WeightParking::kTextEncoder);
    parking_->FinishRestore(WeightParking::kDitText);
  }
  // Tensors that cross ops. Declared before every runtime::OpScope, so on an error return they are
  // destroyed after the open op has ended and are freed at once.
  runtime::DeviceTensor text_ctx, pool_ctx, x;
  // Tensors parked in the host tier (declared after the ones above, so destroyed first).
  ActivationOffload off(host_, r.offload, act, r.steps);
  const Geometry g = GeometryOf(spec_, r);
  const int64_t k = RequestBatch(r);                             // requests in the batch
  const int64_t latent_size = g.tokens * spec_.dit.in_channels;  // floats of one request's latent
  const double latent_floats = static_cast<double>(latent_size);
  const RunState s{.r = r,
                   .spec = spec_,
                   .act = act,
                   .off = off,
                   .text = text_,
                   .dit = dit_,
                   .vae = vae_,
                   .parking = parking_.get(),
                   .g = g,
                   .k = k,
                   .batch = (r.cfg ? 2 : 1) * k,
                   .latent_size = latent_size,
                   .latent_floats = latent_floats,
                   .all_latent_floats = static_cast<double>(k) * latent_floats};

  // Prologue: text encoding and projection, initial noise.
  RETURN_IF_ERROR(EncodePrompts(s, &text_ctx, &pool_ctx));
  RETURN_IF_ERROR(off.TextContextReady(&text_ctx, &pool_ctx));
  RETURN_IF_ERROR(InitLatent(s, &x));
  RETURN_IF_ERROR(off.LatentReady(&x, 0));

  // Body: identical ops and allocations in every step.
  const models::DitExecution execution{r.attention, r.attention_chunks, r.ffn_chunks};
  for (int64_t i = 0; i < r.steps; ++i) {
    RETURN_IF_ERROR(DenoiseStep(s, execution, sp, i, &text_ctx, &pool_ctx, &x));
  }

  // Epilogue: per request, unpatchify, VAE decode, copy out (member 0 of a sequence-parallel
  // group only).
  if (!decodes) {
    runtime::OpScope op(act, "sp.done", {PhaseName(Phase::kVae), Section::kEpilogue, -1});
    x.Reset();
    return core::Status::Ok();
  }
  for (int64_t j = 0; j < k; ++j) RETURN_IF_ERROR(DecodeRequest(s, j, output, &x));
  return core::Status::Ok();
}

}  // namespace tessera::xema
