// TinyDit: an inference-only Diffusion Transformer with text conditioning whose every tensor
// (weights, activations, workspaces) goes through a runtime::DeviceAllocator. It is SmallDit
// (models/small_dit.h) extended MMDiT / Flux-single-block style:
//
// Weights: "dit.params" holds exactly SmallDit's parameter tensors (same names, shapes, order
// and values as SmallDit::Create(config)); "dit.text" holds the text tensors
//   w_txt (text_hidden, Hd), b_txt (Hd)    text tokens -> the stream
//   w_pool (text_hidden, Hd), b_pool (Hd)  pooled text -> added to the timestep conditioning
// drawn as W ~ N(0, 1 / text_hidden) from core::Rng(text_seed), biases 0.
//
// ProjectText (run inside the caller's op): ctx_b = text_b W_txt + b_txt (T_txt, Hd) and
// pool_b = pooled_b W_pool + b_pool (Hd) for each of the B prompts.
//
// Forward on B sequences at one time t over G distinct image latents x_g (N, C_in) (G divides
// B; sequence b reads x_{b % G}): classifier-free guidance of one request runs cond and uncond
// as B = 2 on G = 1 latent; a batch of k requests runs [cond_0 .. cond_{k-1}, uncond x k] as
// B = 2k on G = k latents (B = G = k without guidance):
//   c_b   = W_t2 SiLU(W_t1 freq(1000 t) + b_t1) + b_t2 (+ pool_b when given)
//   h_b   = [ctx_b ; x_{b % G} W_in + b_in + pos(0 .. N-1)]   joint sequence, L = T_txt + N rows
//           (the image rows are embedded once per latent and copied to its other sequences)
//   every block: SmallDit's adaLN block over the joint sequence (attention over all L tokens)
//   out_b = final adaLN layer on the N image rows of h_b    -> (B, N, C_in)
// With no text (T_txt = 0, no pooled) it is SmallDit::Forward on one sequence (tested).
// How a pass runs is DitExecution (outputs equal whatever it says, within float rounding):
// Attention: kFused runs kernels::AttentionForward (its small tile scratch is internal);
// kChunked with k chunks materialises the scores of ceil(L / k) query rows for every
// (sequence, head) in one workspace (B * H, ceil(L / k), L), then softmax and P V by GEMM:
// the unfused attention of diffusers (k = 1: the whole (L, L) matrix per head).
// FFN token chunks (ffn_chunks = k >= 1): the FFN is row-wise, so its B L rows (all
// sequences flattened; a chunk may span two sequences) are cut into chunks of R =
// FfnChunkRows(B L, k) rows, about ceil(B L / k) (the last chunk takes the rest), and each
// chunk runs GEMM in, GELU, GEMM out through ONE reused hidden workspace "dit.block<l>.ffn" of
// R x ffn_hidden floats instead of B L x ffn_hidden. Bytes saved per block op:
// runtime::AlignBytes(4 B L F) - runtime::AlignBytes(4 R F) (F = ffn_hidden); nothing else changes.
// Compute is the same (2 m n k summed over the chunks), paid in ceil(B L / R) - 1 more, smaller
// GEMM calls. Exactness: R is a multiple of kFfnChunkRowMultiple = 8 and the last chunk is never a
// single row, because the GEMM libraries compute a row alike only on those terms: OpenBLAS rounds
// rows of odd-sized calls' tails differently, and oneDNN sends a one-row product to its
// matrix-vector kernel. So the output equals k = 1 bitwise on both backends (tested on seeded
// random configs, k dividing B L or not and k > B L, one BLAS thread); plain ceil(B L / k)
// rows moved it by up to ~6 ulp.
//
// Ops (opened with the given context): "dit.embed" (allocates the stream "dit.h" (B L, Hd) and
// "dit.cond" (B, Hd), frees the text context when Input::release_context), "dit.block<l>"
// (workspaces only, the stream updated in place: "mod" (B, 6 Hd); "norm", "modx", "q", "k",
// "v", "attn" (B L, Hd) each; "rstd" (B L); "ffn" (R, F); then "lse" (B L, H) when fused or
// "scores" (B H, ceil(L / k_att), L) when chunked), "dit.final" (allocates "dit.out" (B N,
// C_in), frees the stream and "dit.cond"). Every call makes the same allocations in the same
// order, so the denoising steps of a request are identical.
// The math of Forward lives in dit_stages.h (row-wise stages on a run of each sequence's rows,
// attention on whole sequences), shared with the sequence-parallel forward (sp_dit.h).
// Errors: Create validates the config; Forward returns InvalidArgument for chunk counts below
// 1; Infeasible (out of device memory) passes out with nothing leaked and no op left open.
// Thread-safety: const methods; one thread per allocator.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "models/small_dit.h"
#include "runtime/device_allocator.h"
#include "runtime/op_scope.h"

namespace tessera::models {

enum class AttentionMode { kFused, kChunked };

// The largest batch Forward takes (cond + uncond needs 2).
inline constexpr int64_t kMaxDitBatch = 8;
// FFN chunks hold a multiple of this many rows (see the file comment).
inline constexpr int64_t kFfnChunkRowMultiple = 8;

// The rows of one FFN chunk for `rows` rows in `chunks` chunks (rows, chunks >= 1): ceil(rows /
// chunks) rounded up to a multiple of kFfnChunkRowMultiple, then raised by that multiple while
// it would leave a last chunk of one row; at most `rows`.
int64_t FfnChunkRows(int64_t rows, int64_t chunks);

// How Forward runs (see the file comment); the defaults are the unmitigated pass.
struct DitExecution {
  AttentionMode attention = AttentionMode::kFused;
  int64_t attention_chunks = 1;  // kChunked: query chunks, >= 1
  int64_t ffn_chunks = 1;        // FFN row chunks, >= 1 (FfnChunkRows rows each)
};

class DitStages;

class TinyDit {
 public:
  static core::StatusOr<TinyDit> Create(const SmallDitConfig& config, int64_t text_hidden,
                                        uint64_t text_seed, runtime::DeviceAllocator& allocator);

  const SmallDitConfig& config() const { return config_; }
  int64_t text_hidden() const { return text_hidden_; }
  int64_t WeightBytes() const {
    return runtime::AlignBytes(params_.bytes()) + runtime::AlignBytes(text_.bytes());
  }
  // SmallDit's flat parameter buffer (in "dit.params").
  std::span<const float> Parameters() const {
    return {params_.f32(), static_cast<size_t>(params_.f32_count())};
  }
  // The weight tensors "dit.params" and "dit.text", which the host tier frees while they are
  // idle and restores (offload.idle_weights); Forward and ProjectText need them allocated.
  runtime::DeviceTensor& params_tensor() { return params_; }
  runtime::DeviceTensor& text_tensor() { return text_; }

  // text[b] (text_tokens, text_hidden), pooled[b] (text_hidden) for b < B = text.size() (equal
  // sizes, 1 <= B <= kMaxDitBatch, text_tokens >= 1). Allocates "dit.text_ctx" (B, T, Hd) and
  // "dit.pool_ctx" (B, Hd); adds its FLOPs to *flops.
  [[nodiscard]] core::Status ProjectText(runtime::DeviceAllocator& allocator,
                                         std::span<const float* const> text,
                                         std::span<const float* const> pooled, int64_t text_tokens,
                                         runtime::DeviceTensor* text_ctx,
                                         runtime::DeviceTensor* pool_ctx, double* flops) const;

  struct Input {
    const float* latent = nullptr;              // (G, N, C_in) image tokens: sequence b reads b % G
    int64_t image_tokens = 0;                   // N >= 1
    float t = 1.0f;                             // diffusion time
    int64_t batch = 1;                          // B in [1, kMaxDitBatch]
    int64_t latents = 1;                        // G >= 1 dividing B (1: every sequence shares x)
    runtime::DeviceTensor* text_ctx = nullptr;  // (B, T_txt, Hd) from ProjectText, or null: no text
    int64_t text_tokens = 0;                    // T_txt (0 without text)
    runtime::DeviceTensor* pool_ctx = nullptr;  // (B, Hd) from ProjectText, or null: no pooled term
    bool release_context = false;               // free *text_ctx and *pool_ctx in "dit.embed"
    // Called inside "dit.embed" once the inputs were read (empty: nothing). What it frees
    // (inputs the host tier keeps a copy of: offload) is released when "dit.embed" ends.
    std::function<core::Status()> after_embed;
  };

  // Returns the prediction "dit.out" (B, N, C_in). InvalidArgument for a malformed input.
  core::StatusOr<runtime::DeviceTensor> Forward(runtime::DeviceAllocator& allocator,
                                                const Input& input, const DitExecution& execution,
                                                const runtime::OpContext& context) const;

 private:
  using BlockOffsets = SmallDitBlockOffsets;
  // SmallDit's tensors in "dit.params", and the text tensors in "dit.text".
  struct Offsets : SmallDitOffsets {
    int64_t w_txt, b_txt, w_pool, b_pool;
  };
  friend class DitStages;  // the forward's stages (dit_stages.h) read the weights
  TinyDit() = default;

  SmallDitConfig config_;
  int64_t text_hidden_ = 0;
  Offsets off_{};
  runtime::DeviceTensor params_;
  runtime::DeviceTensor text_;
};

}  // namespace tessera::models
