// SmallDit: a small Diffusion Transformer (DiT) in fp32 with a hand-written backward, run in
// one process; its attention goes through AttentionBackend (attention_backend.h) so a
// distributed engine can replace it. Not to be confused with models::DitModel, which is only
// a cost-model shape.
//
// Input: a packed varlen batch of S sequences of patch latents x (T, C_in), T = cu_seqlens[S],
// and one diffusion time t_s in [0, 1] per sequence. Output: a prediction (T, C_in) (the
// flow-matching velocity in flow_matching.h). With Hd = hidden, F = ffn_hidden:
//   h    = x W_in + b_in + pos(t)   pos: fixed sinusoidal of the position in the sequence
//   c_s  = W_t2 SiLU(W_t1 freq(1000 t_s) + b_t1) + b_t2   (S, Hd) timestep embedding MLP
//   per block (adaLN): [sh1 sc1 g1 sh2 sc2 g2] = SiLU(c) W_mod + b_mod   (S, 6 Hd)
//     m1 = LN(h) (1 + sc1) + sh1;  q, k, v = m1 W_qkv + b_qkv;  a = Attention(q, k, v)
//     h += g1 * (a W_o + b_o)
//     m2 = LN(h) (1 + sc2) + sh2;  h += g2 * (GELU(m2 W_1 + b_1) W_2 + b_2)
//   final: [sh sc] = SiLU(c) W_fmod + b_fmod;  out = (LN(h) (1 + sc) + sh) W_out + b_out
// LN has no affine parameters (adaLN supplies them); per-sequence vectors are broadcast to the
// sequence's tokens. Attention is non-causal and block-diagonal over the sequences (one
// backend call per layer for the whole batch), with H heads of D = Hd / H.
//
// Sequence parallelism: a "sequence" of the batch may be a chunk of a longer sequence (a
// rank's share): give it the sequence's timestep and its first token's position in
// DitBatch::position_offsets, and use a backend whose attention joins the chunks (e.g. a
// distributed engine); every other op is token-wise or per-segment, so the result equals the
// whole-sequence run (tested with a joining backend). Data-parallel gradients then sum
// across ranks; scale the loss by the global element count (FlowMatchingLoss normalizer).
//
// Parameters and gradients each live in ONE flat fp32 buffer (Parameters(), Gradients()), so a
// data-parallel run can all-reduce all gradients with one call; ParameterTensors() names the
// slices. Weights are stored (in, out) row-major.
//
// Memory: Forward keeps the activations listed in SmallDitActivations for Backward; their size
// is ActivationBytes(config, T, S) exactly (tests check it against the buffers).
//
// Thread-safety: a SmallDit is used by one thread at a time; Forward does not modify it,
// Backward accumulates into its gradient buffer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/attention_backend.h"

namespace tessera::models {

struct SmallDitConfig {
  int64_t in_channels = 16;         // C_in: latent channels per token (patch)
  int64_t hidden = 256;             // Hd
  int64_t num_heads = 4;            // H; must divide hidden
  int64_t num_layers = 4;           // transformer blocks
  int64_t ffn_hidden = 1024;        // F
  int64_t timestep_freq_dim = 256;  // sinusoidal timestep features; even
  float layer_norm_eps = 1e-6f;
  // Std of W_mod and W_fmod at init (other weights: 1 / sqrt(fan_in); biases 0). 0 gives the
  // adaLN-Zero start of DiT: shift = scale = gate = 0, so every block starts as the identity.
  float modulation_init_std = 0.02f;
  uint64_t init_seed = 1;

  int64_t head_dim() const { return num_heads > 0 ? hidden / num_heads : 0; }
};

// The number of parameters SmallDit::Create allocates for `c` (the tensor list below), in
// double so it can be computed for any sizes without overflow.
double SmallDitParameterCount(const SmallDitConfig& c);
// The largest SmallDit allowed (2^31 parameters: 32 GiB of weights, gradients and AdamW state).
inline constexpr int64_t kMaxSmallDitParameters = int64_t{1} << 31;

// InvalidArgument naming the field when a size is < 1 or too large (in_channels, hidden,
// timestep_freq_dim <= 2^20, num_layers <= 2^16, ffn_hidden <= 2^24, parameters <=
// kMaxSmallDitParameters), num_heads does not divide hidden,
// timestep_freq_dim is odd, or layer_norm_eps is not positive and finite.
[[nodiscard]] core::Status ValidateSmallDitConfig(const SmallDitConfig& config);

// One named parameter tensor: rows x cols floats at `offset` in the flat buffer.
struct ParameterTensor {
  std::string name;  // e.g. "block0.w_qkv"
  int64_t offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  bool is_bias = false;  // a bias vector (rows == 1; zero at init, no weight decay)
  int64_t size() const { return rows * cols; }
};

// A packed varlen batch; non-owning views kept alive by the caller for the call.
struct DitBatch {
  std::span<const float> latents;       // (T, C_in)
  std::span<const int64_t> cu_seqlens;  // S + 1 offsets, from 0, strictly increasing
  std::span<const float> timesteps;     // (S) diffusion times
  // (S) or empty (all 0): position of each segment's first token within its sequence, so a
  // segment can be a chunk of a longer sequence whose attention a distributed backend joins.
  std::span<const int64_t> position_offsets = {};
  int64_t num_seqs() const { return static_cast<int64_t>(cu_seqlens.size()) - 1; }
  int64_t num_tokens() const { return cu_seqlens.empty() ? 0 : cu_seqlens.back(); }
};

// Everything Forward keeps for Backward, plus the output. Sizes (T tokens, S sequences):
struct SmallDitActivations {
  struct Block {
    std::vector<float> mod;                 // (S, 6 Hd) adaLN shift/scale/gate x2
    std::vector<float> norm1, rstd1, mod1;  // (T, Hd), (T), (T, Hd)
    std::vector<float> q, k, v, attn, lse;  // (T, Hd) x4, (T, H)
    std::vector<float> proj;                // (T, Hd) attention output projection
    std::vector<float> norm2, rstd2, mod2;  // (T, Hd), (T), (T, Hd)
    std::vector<float> ffn_pre, ffn_act;    // (T, F) x2
    std::vector<float> ffn_out;             // (T, Hd)
  };
  int64_t num_tokens = 0;
  int64_t num_seqs = 0;
  std::vector<int64_t> cu_seqlens;    // (S + 1)
  std::vector<float> latents;         // (T, C_in) copy of the input
  std::vector<float> t_freq;          // (S, timestep_freq_dim)
  std::vector<float> t_pre, t_act;    // (S, Hd) x2
  std::vector<float> cond, cond_act;  // (S, Hd) x2
  std::vector<Block> blocks;
  std::vector<float> final_mod;              // (S, 2 Hd)
  std::vector<float> norm_f, rstd_f, mod_f;  // (T, Hd), (T), (T, Hd)
  std::vector<float> output;                 // (T, C_in) the prediction

  // Bytes held by all the vectors above (the output included).
  int64_t Bytes() const;
};

// Where each parameter tensor starts in the flat buffer (floats; the same as
// ParameterTensors()' offsets), for code that runs the model's weights elsewhere (e.g. an
// inference forward on other memory).
struct SmallDitBlockOffsets {
  int64_t w_mod, b_mod, w_qkv, b_qkv, w_o, b_o, w_ff1, b_ff1, w_ff2, b_ff2;
};
struct SmallDitOffsets {
  int64_t w_in, b_in, w_t1, b_t1, w_t2, b_t2;
  std::vector<SmallDitBlockOffsets> blocks;
  int64_t w_fmod, b_fmod, w_out, b_out;
};

class SmallDit {
 public:
  // Validates the config and initialises the parameters from config.init_seed; biases are 0.
  static core::StatusOr<SmallDit> Create(const SmallDitConfig& config);

  const SmallDitConfig& config() const { return config_; }

  // Runs the model; fills *acts (reusing its storage) and acts->output. InvalidArgument for a
  // malformed batch (no sequences, empty sequence, sizes that disagree); attention errors pass
  // through.
  [[nodiscard]] core::Status Forward(const DitBatch& batch, AttentionBackend& backend,
                                     SmallDitActivations* acts) const;

  // Given d_output (T, C_in) = dLoss/d(acts.output), ACCUMULATES dLoss/dparameters into
  // Gradients() (call ZeroGradients() first for a fresh step). acts must come from Forward on
  // this model with unchanged parameters.
  [[nodiscard]] core::Status Backward(const SmallDitActivations& acts,
                                      std::span<const float> d_output, AttentionBackend& backend);

  std::span<float> Parameters() { return params_; }
  std::span<const float> Parameters() const { return params_; }
  std::span<float> Gradients() { return grads_; }
  std::span<const float> Gradients() const { return grads_; }
  void ZeroGradients();
  int64_t NumParameters() const { return static_cast<int64_t>(params_.size()); }
  const std::vector<ParameterTensor>& ParameterTensors() const { return tensors_; }
  const SmallDitOffsets& ParameterOffsets() const { return off_; }
  // One entry per parameter: 1 for weight matrices, 0 for biases (AdamW's decay_mask).
  std::vector<uint8_t> DecayMask() const;

  // Bytes of activations Forward keeps for a batch of num_tokens tokens in num_seqs sequences
  // (== SmallDitActivations::Bytes() after that Forward). 4 bytes per float, 8 per offset:
  //   4 * (L * (6 S Hd + T (10 Hd + 2 + H + 2 F)) + 2 T C_in + S Ft + 6 S Hd + T (2 Hd + 1))
  //   + 8 (S + 1).
  // Peak memory of a training step is roughly: parameters + gradients (4 bytes each) + AdamW
  // state (8 bytes per parameter) + ActivationBytes + BackwardScratchBytes; Forward also holds
  // a transient (T, Hd) residual stream and the attention backend its own scratch.
  static int64_t ActivationBytes(const SmallDitConfig& config, int64_t num_tokens,
                                 int64_t num_seqs);
  // Bytes of the temporary gradient buffers Backward keeps in the model between calls:
  // 4 * (6 T Hd + 2 T F + 11 S Hd) for the largest batch seen (== ScratchBytes() after it).
  static int64_t BackwardScratchBytes(const SmallDitConfig& config, int64_t num_tokens,
                                      int64_t num_seqs);
  int64_t ScratchBytes() const;

  // Matrix-multiply FLOPs (2 m n k per GEMM; element-wise work not counted) of one Forward
  // on sequences of the given lengths: the linear layers, 2 T (C_in Hd + L (4 Hd^2 + 2 Hd F)
  // + Hd C_in) + 2 S (Ft Hd + Hd^2 + 6 L Hd^2 + 2 Hd^2), plus attention 4 L_s^2 Hd per
  // sequence and layer. The backward is 2x the linear part and 2.5x the attention part
  // (kernels/attention.h's convention); TrainingStepFlops is forward + backward.
  static int64_t ForwardFlops(const SmallDitConfig& config, std::span<const int64_t> seq_lens);
  static int64_t TrainingStepFlops(const SmallDitConfig& config, std::span<const int64_t> seq_lens);

 private:
  using BlockOffsets = SmallDitBlockOffsets;
  using Offsets = SmallDitOffsets;

  explicit SmallDit(const SmallDitConfig& config);
  int64_t AddTensor(const std::string& name, int64_t rows, int64_t cols);

  // Backward's temporary gradients, kept between calls to avoid reallocation (see
  // BackwardScratchBytes).
  struct BackwardScratch {
    std::vector<float> dx_a, dx_b, dh, dq, dk, dv, dffn_a, dffn_b;
    std::vector<float> dmod, dfinal_mod, dcond_act, ds_a, ds_b;
  };

  SmallDitConfig config_;
  std::vector<ParameterTensor> tensors_;
  Offsets off_;
  std::vector<float> params_;
  std::vector<float> grads_;
  BackwardScratch scratch_;
};

}  // namespace tessera::models
