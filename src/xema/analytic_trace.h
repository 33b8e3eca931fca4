// Analytic memory traces of real diffusion models at paper scale, built from their public
// configurations (bf16, 2 bytes per parameter and per activation element), labelled
// provenance "modeled": no GPU run produced them. They give `layout`, `intervals` and
// `allocsim` realistic shapes until the pipeline records traces.
//
// Models (AnalyticModelNames(); their shapes are data files, analytic_model.h):
//   flux2-dev     DiT 32B: 8 double + 48 single blocks, hidden 6144 (48 heads x 128), MLP
//                 ratio 3; Mistral-Small 24B text encoder (40 layers, hidden 5120, FFN 32768,
//                 512 tokens); image tokens = W*H/256 (VAE /8, patch 2) + 512 text tokens;
//                 VAE decoder up blocks 512-512-256-128 channels; guidance-distilled (cfg off).
//   cogvideox-5b  42 layers, hidden 3072 (48 x 64), FFN 12288, 5.6B; T5-XXL 4.7B encoder
//                 (24 layers, hidden 4096, FFN 10240, 226 tokens); VAE 8x8 spatial, x4 time,
//                 patch 2: tokens = ((F-1)/4+1) * (H/16) * (W/16) + 226 (720x480x49: 17,550
//                 video tokens); decoder 512-256-256-128; cfg on.
//   ltx-2         19B: 48 layers, video hidden 4096 (32 x 128) (the audio stream's weights
//                 are in the 19B, its activations are not modeled); Gemma-3-12B encoder
//                 (48 layers, hidden 3840, FFN 15360, 1024 tokens); VAE /32 spatial, /8 time,
//                 patch 1: tokens = ((F-1)/8+1) * (H/32) * (W/32); decoder
//                 1024-512-256-128-128; cfg on.
// Structure (what a recorded trace of the pipeline would show, one tensor per block output):
//   weights: one tensor per encoder layer, per DiT block, plus embeddings and the VAE
//     decoder (resident for the whole request);
//   prologue: one op per encoder layer (output hidden state carried to the next layer, FFN
//     intermediate transient), then the prompt embedding, kept until the last step (x2 with
//     cfg: the negative prompt);
//   body (one step): dit.embed, one op per block (QKV, attention output and MLP intermediate
//     transient; the block output carried to the next block; with fused_attention false, the
//     H x L^2 score matrix too), dit.final (the velocity) and sched.step (the next latent,
//     freed by the next step's embed, the last one by the VAE);
//     cfg doubles the batch of every activation;
//   epilogue: one op per VAE up block (its output carried to the next block, two transient
//     full-size intermediates).
// Flops and time_s are modeled: flops_per_s achieved when the GPU is full (400 TFLOP/s unless
// the device says otherwise; the wave quantization stays the H100's 132 SMs on every device); a DiT
// block's GEMMs and attention run at that rate times their wave efficiency on 132 SMs (tiles /
// (waves x 132); GEMM output tiles 128 x 256, attention tiles 128 queries of one head), so a small
// per-device slice (a small image, a high SP degree, fine FFN chunks) runs below it.
// Thread-safe (no state).
//
// Serving choices (Xema part 3's planner at paper scale), all modeled:
//   sp_degree d (Ulysses sequence parallelism over d devices, weights replicated): the trace
//     is member 0's (every member runs the text encoder; member 0 also decodes). Every body
//     activation holds ceil(tokens / d) rows (scores: heads / d heads over all tokens); each
//     block adds the head-split q, k, v ("<block>.qkv_heads", 3 x its local rows); block
//     flops / d; each block pays four all-to-alls (q, k, v out, attention back), each
//     sending (d - 1) / d of a local (rows, hidden) tensor at link_bytes_per_s, not overlapped
//     with compute. heads % d == 0.
//   ffn_chunks k: the MLP intermediate over k token chunks (bytes / k); its GEMMs over 1/k of
//     the rows (their wave efficiency), +15 us per extra chunk per block (three launches).
//   vae_tiles t (t x t tiles with 1/8 tile overlap on each side): every VAE intermediate
//     except the full-size output / t^2 x 1.25^2; VAE flops x 1.25^2 (overlap recompute).
//   encoder_on_host: the text encoder's weights stay in host memory; layer i streams into a
//     double-buffered device buffer ("text.l<i>.w.stream", live over ops i-1 .. i) at
//     host_bytes_per_s; an encoder op takes max(compute, copy) (the first copy exposed).
//   batch k (k requests of the template in one pass, as the tiny pipeline's batch_mates): the
//     encoder runs k prompts (+ the negative prompt once with cfg); every DiT activation, flop
//     and all-to-all x k (k (x2 with cfg) sequences, so the GEMMs' and attention's tiles fill
//     more of the GPU); the latents x k; the VAE decodes the requests one after another (ops
//     "vae.up<i>", then "vae1.up<i>", ...). The key's batch is k.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "xema/analytic_model.h"
#include "xema/memory_trace.h"

namespace tessera::xema {

struct AnalyticRequest {
  std::string model;  // one of AnalyticModelNames()
  int64_t width = 1024;
  int64_t height = 1024;
  int64_t frames = 1;  // 1 for flux2-dev; 4k+1 for cogvideox-5b, 8k+1 for ltx-2
  int64_t steps = 28;
  int cfg = -1;  // -1: the model's default; 0 off; 1 on
  bool fused_attention = true;
  // Serving choices (see the file comment); the defaults model the plain request.
  int64_t sp_degree = 1;            // [1, 64], dividing the model's heads
  double link_bytes_per_s = 450e9;  // per direction between SP members (NVLink 4: 450 GB/s)
  int64_t ffn_chunks = 1;           // [1, 4096]
  int64_t vae_tiles = 1;            // [1, 64]
  bool encoder_on_host = false;
  double host_bytes_per_s = 55e9;  // host -> device (PCIe 5 x16, achieved)
  int64_t batch = 1;               // requests in one pass, [1, 64]
  double flops_per_s = 4e14;       // achieved bf16 rate of a full GPU (the wave efficiency's base)
};

struct AnalyticModelInfo {
  int64_t heads = 0;         // attention heads (an SP degree divides them)
  bool default_cfg = false;  // classifier-free guidance by default
  bool video = false;        // frames = temporal factor x k + 1
};
// NotFound for an unknown name.
core::StatusOr<AnalyticModelInfo> FindAnalyticModel(const std::string& model);

// "1024x1024" -> (width, height); each in [16, 16384]. InvalidArgument "size: got ..." else.
core::StatusOr<std::pair<int64_t, int64_t>> ParseImageSize(const std::string& text);

// InvalidArgument naming the field for an unknown model, a size not a multiple of the model's
// pixel granularity, frames the VAE cannot produce, or a trace beyond the trace bounds.
core::StatusOr<MemoryTrace> AnalyticTrace(const AnalyticRequest& request);

}  // namespace tessera::xema
