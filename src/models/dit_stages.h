// DitStages: the math of TinyDit's forward (tiny_dit.h) cut into stages, so that the
// single-device forward (TinyDit::Forward) and the sequence-parallel one (sp_dit.h) run the
// same code.
//
// Row-wise stages work on "local rows" (DitRows): of each of the B sequences, which all have
// the length L = T_txt + N (text rows first), the rows [begin, end), packed sequence after
// sequence into (B (end - begin), Hd) tensors. TinyDit::Forward uses [0, L); a
// sequence-parallel member its own run of rows. Per-sequence terms (conditioning, modulation
// shifts, scales and gates) are broadcast over each sequence's local rows, so a row's value
// does not depend on which other rows are local, except through the GEMMs' rounding (their
// row count differs).
// The attention stage works on whole sequences: q, k, v, o (B L, H', D) with any head count
// H' (all H heads on one device; H/d on a sequence-parallel member after the Ulysses
// all-to-all), fused or chunked as DitExecution says, with its workspace given by the caller.
//
// Shared by TinyDit and the sequence-parallel DiT forward built on it (not a public API). Sizes are
// trusted (the forwards call Validate first); every buffer is caller-owned (device workspaces) with
// the extent given at each stage; buffers do not alias unless stated. Thread-safety: static
// functions over a const TinyDit.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"
#include "models/tiny_dit.h"

namespace tessera::models {

// Local rows: rows [begin, end) of each of `batch` sequences of L = text_tokens + image_tokens
// rows (0 <= begin < end <= L).
struct DitRows {
  int64_t batch = 1;         // B
  int64_t text_tokens = 0;   // T_txt (0 without text)
  int64_t image_tokens = 0;  // N
  int64_t begin = 0;
  int64_t end = 0;

  int64_t seq_len() const { return text_tokens + image_tokens; }  // L
  int64_t per_seq() const { return end - begin; }                 // local rows per sequence
  int64_t local() const { return batch * per_seq(); }             // local rows in all
  // The first local image row as a row of its sequence, and the local image rows per sequence.
  int64_t image_begin() const { return std::max(begin, text_tokens); }
  int64_t image_per_seq() const { return std::max<int64_t>(0, end - image_begin()); }
};

// Cumulative row offsets of `batch` runs of `per_seq` rows (0, per_seq, ..., batch per_seq).
class DitCuSeqlens {
 public:
  DitCuSeqlens(int64_t batch, int64_t per_seq) : size_(static_cast<size_t>(batch + 1)) {
    for (int64_t b = 0; b <= batch; ++b) cu_[static_cast<size_t>(b)] = b * per_seq;
  }
  std::span<const int64_t> span() const { return {cu_.data(), size_}; }

 private:
  std::array<int64_t, kMaxDitBatch + 1> cu_{};
  size_t size_;
};

// FLOPs and bytes an op adds to its runtime::OpScope.
struct DitCost {
  double flops = 0;
  double bytes = 0;
};

class DitStages {
 public:
  // TinyDit::Forward's input checks (its messages): batch, latents, tokens, latent, context
  // sizes, chunk counts.
  [[nodiscard]] static core::Status Validate(const TinyDit& dit, const TinyDit::Input& in,
                                             const DitExecution& execution);
  // All rows [0, L) of the input's sequences (T_txt = 0 without a text context).
  static DitRows AllRows(const TinyDit::Input& in);

  // cond (B, Hd) := SiLU(timestep MLP(1000 t) + pooled_b); temb: ft + 2 Hd floats of scratch.
  static void Condition(const TinyDit& dit, const TinyDit::Input& in, float* temb, float* cond);
  // h (rows.local(), Hd) := the local rows of [ctx_b ; x_{b % G} W_in + b_in + pos] (G =
  // in.latents): the image rows of latent g are computed once (in sequence g) and copied to
  // the sequences b > g with b % G == g. pos_row: Hd floats of scratch.
  static void Embed(const TinyDit& dit, const TinyDit::Input& in, const DitRows& rows,
                    float* pos_row, float* h);
  // The end of "dit.embed" once the inputs were read: frees the text context when
  // in.release_context, then runs in.after_embed.
  [[nodiscard]] static core::Status FinishEmbed(const TinyDit::Input& in);
  // `latents` (G) image embeddings of the local image rows.
  static DitCost EmbedCost(const TinyDit& dit, const DitRows& rows, int64_t latents);

  // Block `layer` up to attention, on the local rows: mod (B, 6 Hd) := cond W_mod + b_mod;
  // norm (local, Hd), rstd (local) := LayerNorm(x); modx (local, Hd) := its modulation;
  // q, k, v (local, Hd) := modx W_{q,k,v} + b_{q,k,v}.
  static void BlockQkv(const TinyDit& dit, int64_t layer, const DitRows& rows, const float* cond,
                       const float* x, float* mod, float* norm, float* rstd, float* modx, float* q,
                       float* k, float* v);

  // The attention workspace of a pass: "lse" (B L, H') when fused, "scores" (B H', ceil(L /
  // k), L) when chunked with k chunks. `what` gets the tensor's name suffix.
  static int64_t AttentionWorkspaceFloats(const DitExecution& execution, int64_t batch,
                                          int64_t seq_len, int64_t heads, const char** what);
  // o (B L, H', D) := attention of q, k, v (B L, H', D) over each of the B sequences of L rows,
  // for each of the H' heads, through `workspace` (AttentionWorkspaceFloats floats). Errors of
  // the kernel are prefixed with "<op_name> attention".
  [[nodiscard]] static core::Status Attention(const DitExecution& execution,
                                              const std::string& op_name, int64_t batch,
                                              int64_t seq_len, int64_t heads, int64_t head_dim,
                                              const float* q, const float* k, const float* v,
                                              float* o, float* workspace);

  // The rest of block `layer`, on the local rows: x += gate_msa (attn W_o + b_o); x +=
  // gate_mlp FFN(modulate(LayerNorm(x))), the FFN over chunks of `ffn_rows` rows through ffn
  // (ffn_rows, F). norm, rstd, modx (as in BlockQkv) are overwritten; mod is BlockQkv's.
  static void BlockOutFfn(const TinyDit& dit, int64_t layer, const DitRows& rows, const float* mod,
                          const float* attn, int64_t ffn_rows, float* x, float* norm, float* rstd,
                          float* modx, float* ffn);
  // The cost of a block on the local rows, its attention over `attention_heads` heads of all
  // B L rows.
  static DitCost BlockCost(const TinyDit& dit, const DitRows& rows, int64_t attention_heads);

  // out (B I, C_in) := the final adaLN layer on the local image rows of h (local, Hd), I =
  // rows.image_per_seq() (nothing when 0). fmod (B, 2 Hd); norm, modx (B I, Hd); rstd (B I):
  // scratch.
  static void Final(const TinyDit& dit, const DitRows& rows, const float* h, const float* cond,
                    float* fmod, float* norm, float* rstd, float* modx, float* out);
  static DitCost FinalCost(const TinyDit& dit, const DitRows& rows);
};

}  // namespace tessera::models
