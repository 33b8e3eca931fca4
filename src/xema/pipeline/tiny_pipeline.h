// DiffusionPipeline: a real text-to-image / text-to-video diffusion pipeline on CPU (fp32,
// seeded synthetic weights) whose every tensor goes through a runtime::DeviceAllocator, so that
// Xema can record the memory trace of a request, plan a static layout and replay the request.
//
// Models (TinyModel): "tiny-t2i" and "tiny-t2v": a text encoder (text_encoder.h: 4 layers,
// hidden 256, 77 tokens), a text-conditioned DiT (tiny_dit.h: hidden 256, 4 heads, 4 layers,
// FFN 1024, patch 2 over 16 latent channels) and a VAE decoder (vae_decoder.h: x8 spatial;
// the video model also x4 temporal: F = 4 (Lf - 1) + 1 frames from Lf latent frames).
//
// A request (DiffusionRequest) runs flow-matching sampling (models/flow_matching.h: x_t =
// (1 - t) x0 + t e, velocity v = e - x0) from t = 1 (noise) to t = 0 in `steps` Euler steps
// t_i = 1 - i / steps: x_{i+1} = x_i + (t_{i+1} - t_i) v(x_i, t_i), with classifier-free
// guidance v = v_u + guidance (v_c - v_u), v_u the prediction for the empty prompt.
// Latents stay patchified during denoising: x (N, C_in), N = Lf (H / 16) (W / 16) tokens, token
// (f, gy, gx) holding channel (c p + py) p + px of latent pixel (f, c, gy p + py, gx p + px); the
// initial noise is core::Rng(request.seed) normals in that order.
//
// Ops of Run (the trace template; names as recorded):
//   prologue (Phase kText, step -1): "text.cond.embed", "text.cond.layer<l>", "text.cond.final";
//     with cfg the same for "text.uncond" (prompt ""); "dit.text_proj" (text tokens and pooled
//     vectors projected for the DiT, kept until "dit.embed" of the last step frees them);
//     then "latent.init" (Phase kDenoise) allocating the noise latent "latent.x".
//   body (Phase kDenoise, step i): "dit.embed", "dit.block<l>", "dit.final" (one DiT pass over a
//     batch of 2 sequences with cfg, 1 without), "cfg.combine" (cfg only), "euler.step"
//     (allocates x_{i+1} "latent.x", frees x_i and the prediction). Identical in every step
//     except that the last step's "dit.embed" frees the prologue's text context.
//   epilogue (Phase kVae): "vae.unpatchify" (frees the last latent), the VAE block ops, and
//     "vae.output", which copies the frames into the caller's buffer and frees the image.
// A batch of k = RequestBatch > 1 requests (batch_mates) runs as one template: prologue
//   "text.cond.*" (request 0), "text.cond<j>.*" (request j >= 1), "text.uncond.*" once (its
//   encoding serves every request), "dit.text_proj" over the 2k (cfg) or k sequences [cond_0 ..
//   cond_{k-1}, uncond x k], "latent.init" allocating "latent.x" (k, N, C_in) (request j's
//   slice from core::Rng(seed_j), as if it ran alone); body: the same ops as above, one DiT pass
//   over all sequences (sequence b reads latent b % k), "cfg.combine" with each request's own
//   guidance (cond of j at sequence j, uncond at k + j), "euler.step" on all k latents;
//   epilogue, request after request: request 0's ops as above, request j >= 1's with "vae<j>"
//   for "vae" ("vae<j>.unpatchify", "vae<j>.block<b>", ..., "vae<j>.output"; tensors
//   "vae<j>.latent", "vae<j>.image"). The latent x stays until the last request's unpatchify.
//   Every request's output equals its run alone within float rounding (the GEMMs run over
//   more rows; tested).
// Every allocation of Run happens inside an op (but restored weights, below); on error every
// tensor of the request is freed, no op is left open and no host copy is in flight (RAII).
// Same request -> bitwise the same output on any allocator, with any offload set.
//
// Offload (request.offload; needs a pipeline loaded with a HostTier, host_tier.h): tensors are
// parked in host memory over the ops where they are idle and copied back before their next
// use, exactly. text_context, latent and image: activation_offload.h (the context is away
// over every step's DiT blocks, x_i over its DiT pass, each decoded slice from the end of its
// last block op, the image assembled on the host). idle_weights (weight_parking.h): the text
// encoder's weights are parked in "dit.text_proj", "dit.text" in "latent.init", "dit.params"
// in "vae.unpatchify" (each released when that op ends); the next Run restores them before
// its first op, outside ops, as weights (that request pays the copy; "dit.params" is waited
// for only before the first DiT pass, so the prologue overlaps it). The recorded trace shows
// a weight parked during the request as a prologue tensor (trace_recorder.h).
// Heap outside the allocator during Run: op names and the attention kernel's tile scratch
// (tens of KiB at 64x64; tested < 1 MiB), and with offload the host tier's copies.
//
// Errors: ValidateRequest returns InvalidArgument naming the field; Load and Run pass
// Infeasible (out of device memory) out with nothing leaked.
// Lifetime: the allocator must outlive the pipeline. Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "models/small_dit.h"
#include "models/text_encoder.h"
#include "models/tiny_dit.h"
#include "models/vae_decoder.h"
#include "runtime/device_allocator.h"
#include "xema/memory_trace.h"
#include "xema/pipeline/host_tier.h"
#include "xema/pipeline/sp_dit.h"
#include "xema/pipeline/weight_parking.h"

namespace tessera::xema {

struct TinyModelSpec {  // the model presets
  std::string name;     // "tiny-t2i" or "tiny-t2v"
  bool video = false;
  int64_t latent_channels = 16;
  int64_t patch = 2;            // DiT patch over the latent
  int64_t spatial_factor = 8;   // VAE: pixels per latent pixel
  int64_t temporal_factor = 1;  // 4 for video
  models::SmallDitConfig dit;   // in_channels = latent_channels * patch * patch; init_seed unused
  models::TextEncoderConfig text;  // text.hidden is the DiT's text_hidden
  models::VaeDecoderConfig vae;    // latent_channels as above; 2^(blocks - 1) = spatial_factor
  uint64_t seed = 1;               // every weight (text, DiT, VAE) is drawn from it
};

std::vector<std::string> TinyModelNames();                         // {"tiny-t2i", "tiny-t2v"}
core::StatusOr<TinyModelSpec> TinyModel(const std::string& name);  // NotFound listing names

// InvalidArgument naming the first inconsistent field of a (possibly edited) spec.
core::Status ValidateSpec(const TinyModelSpec& spec);

// Bounds of a request.
inline constexpr int64_t kMaxRequestPixels = 2048;  // width and height
inline constexpr int64_t kMaxRequestFrames = 129;
inline constexpr int64_t kMaxRequestSteps = 1000;
inline constexpr int64_t kMaxAttentionChunks = 4096;
inline constexpr int64_t kMaxPromptBytes = 4096;
inline constexpr float kMaxGuidance = 100.0f;
inline constexpr int64_t kMaxFfnChunks = 4096;
inline constexpr int64_t kMaxVaeTiles = 64;

// Tensors parked in the host tier (host_tier.h) over the ops where they are idle, and copied
// back before their next use: exact (outputs bitwise unchanged), paid for in copy time.
struct OffloadSet {
  bool text_context = false;  // the DiT's projected text context, between uses in each step
  bool latent = false;        // the latent x_i, while the DiT pass of step i runs
  bool image = false;         // the decoded frames of earlier VAE slices / tiles
  bool idle_weights = false;  // text-encoder weights after the prologue, DiT weights in the VAE
  bool any() const { return text_context || latent || image || idle_weights; }
};
// The flag of `set` that `name` names ("text", "latent", "image" or "weights", as the CLI and
// the plan files spell them), or null for any other name.
bool* OffloadFlag(OffloadSet& set, std::string_view name);

// Another request of the same template run in the same DiT passes as a request (batch > 1):
// what may differ between requests of one template.
struct BatchMate {
  std::string prompt;  // <= kMaxPromptBytes
  uint64_t seed = 1;   // its initial noise
  float guidance = 4.0f;
};
// The most requests one pass runs (with cfg each is two DiT sequences: models::kMaxDitBatch).
inline constexpr int64_t kMaxRequestBatch = models::kMaxDitBatch / 2;

struct DiffusionRequest {
  std::string model = "tiny-t2i";
  int64_t width = 64, height = 64;  // pixels, multiples of spatial_factor * patch (16)
  int64_t frames = 1;               // 1 for images; 4k+1 for video
  int64_t steps = 4;                // Euler steps, [1, 1000]
  bool cfg = true;  // classifier-free guidance: conditional + unconditional ("" prompt) per step
  float guidance = 4.0f;                                // finite, in [0, kMaxGuidance]
  std::string prompt = "a red cube on a wooden table";  // <= kMaxPromptBytes
  uint64_t seed = 1;                                    // initial noise
  models::AttentionMode attention = models::AttentionMode::kFused;
  int64_t attention_chunks = 1;  // kChunked: query chunks, [1, kMaxAttentionChunks]
  int64_t vae_frame_slices = 1;  // decode in this many slices, [1, frames]
  // Mitigations (Xema part 2); the defaults run the unmitigated pipeline.
  int64_t ffn_chunks = 1;  // the DiT's FFN over this many token chunks, [1, kMaxFfnChunks]
  int64_t vae_tiles = 1;   // the VAE decodes a vae_tiles x vae_tiles grid, [1, kMaxVaeTiles]
  OffloadSet offload;
  // Further requests of this template run with this one as one batch: every DiT pass over the
  // batch's sequences at once, the sampler and the VAE per request. Batch = 1 +
  // batch_mates.size() in [1, kMaxRequestBatch]; no offload with a batch > 1.
  std::vector<BatchMate> batch_mates;
};
// 1 + request.batch_mates.size().
int64_t RequestBatch(const DiffusionRequest& request);

// InvalidArgument "request.width: got 70, must be a positive multiple of 16 ..." style for
// every field: model must be spec.name; width/height positive multiples of spatial_factor *
// patch up to kMaxRequestPixels; frames 1 for an image model, temporal_factor k + 1 up to
// kMaxRequestFrames for a video model; steps in [1, 1000]; guidance finite in [0, 100];
// prompt at most kMaxPromptBytes; attention a known mode; chunks and slices in range;
// at most kMaxRequestBatch - 1 batch mates, each with a prompt and guidance as above
// ("request.batch_mates[i].prompt"), and no offload with any.
core::Status ValidateRequest(const TinyModelSpec& spec, const DiffusionRequest& request);
TraceKey KeyOf(const DiffusionRequest& request);  // dtype "f32", sp_degree 1, batch RequestBatch
// RequestBatch * frames * 3 * height * width: request after request (the request itself
// first, then its batch mates in order), each (frames, 3, height, width).
int64_t OutputFloats(const DiffusionRequest& request);

// A lower bound on the peak device bytes of `request` (valid for `spec`), computed without
// running it: the weights (but the DiT's text projections) plus the most that one of the VAE's two
// full-resolution blocks holds at once for the first slice and its largest (haloed) tile
// (input, the im2col workspace of one frame, output, or the tile's RGB workspace and the image
// of all frames), each rounded as the allocator does. Lets a caller refuse a request that
// cannot fit before any work is done. Tested <= the measured peak, with and without tiles. With
// offload.image the image term is the first slice's frames; with offload.idle_weights the
// weights are the VAE's only (the others are parked during the VAE).
int64_t MinimumPeakBytes(const TinyModelSpec& spec, const DiffusionRequest& request);

class DiffusionPipeline {
 public:
  // Allocates every weight (TensorKind::kWeight, outside any op: "text.embed",
  // "text.layer<l>", "dit.params", "dit.text", "vae.conv<i>.w/.b") and initialises it from
  // spec.seed. With a host tier (which must outlive the pipeline), requests may offload, and
  // the weights that idle_weights parks are mirrored to it now (weight_parking.h).
  // InvalidArgument for a bad spec; Infeasible passes out (nothing leaked).
  static core::StatusOr<std::unique_ptr<DiffusionPipeline>> Load(
      const TinyModelSpec& spec, runtime::DeviceAllocator& allocator, HostTier* host = nullptr);
  ~DiffusionPipeline();

  const TinyModelSpec& spec() const { return spec_; }
  int64_t WeightBytes() const;  // aligned (AlignBytes) sum of the weight tensors
  // Aligned bytes of the weights parked by the last request (idle_weights), which the next
  // Run restores; device live bytes between requests are WeightBytes() - ParkedWeightBytes().
  int64_t ParkedWeightBytes() const;

  // Runs one request, or a batch of k = RequestBatch(request) requests at once (see the file
  // comment); writes the decoded frames (frames, 3, height, width) of each request in turn
  // into `output` (size OutputFloats). Validates first (InvalidArgument, also for a wrong
  // output size, and for an offload without a host tier or with a batch > 1).
  // `activations` (optional; must outlive the call): every tensor and op of the request goes
  // to it instead of the load allocator, which then holds only the weights: a server keeps one
  // copy of a model's weights and runs each request template from its own activation arena
  // (the recorded trace has no weights then). Output bitwise the same. Parking idle weights
  // needs one allocator: offload.idle_weights with a separate `activations` is
  // InvalidArgument.
  // `sp` (optional): this pipeline is member sp->member of a sequence-parallel group of
  // d = sp->group->size() devices, each running Run with its own pipeline (the same spec:
  // replicated weights) and the same request at once: the text encoding and the sampler on
  // every member, the DiT's denoising passes by SequenceParallelForward (sp_dit.h), the VAE on
  // member 0 only, which writes `output`; the other members pass an empty output and end with
  // an op "sp.done" (their epilogue) once the last step is taken. Output equal to a run on one
  // device within float rounding (bitwise with oneDNN). No offload with sp (InvalidArgument).
  core::Status Run(const DiffusionRequest& request, std::span<float> output,
                   runtime::DeviceAllocator* activations = nullptr, const SpMember* sp = nullptr);

 private:
  DiffusionPipeline(const TinyModelSpec& spec, runtime::DeviceAllocator& allocator,
                    models::TextEncoder text, models::TinyDit dit, models::VaeDecoder vae);

  TinyModelSpec spec_;
  runtime::DeviceAllocator& allocator_;
  models::TextEncoder text_;
  models::TinyDit dit_;
  models::VaeDecoder vae_;
  int64_t weight_bytes_ = 0;
  HostTier* host_ = nullptr;
  std::unique_ptr<WeightParking> parking_;  // with a host tier
};

}  // namespace tessera::xema
