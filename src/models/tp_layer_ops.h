// The tensor-parallel operators of one Megatron transformer layer with sequence parallelism:
// the one table of their names, kinds and GEMM dimensions, shared by the model that runs them
// (small_gpt.h, through tp_ops.h) and the planners that predict them (Compass).
//
// On t ranks with M tokens (hidden h, FFN f, heads H, KV heads Hkv of head_dim D = h / H,
// gate g = 2 for a gated (SwiGLU) MLP, else 1), per layer and training step, in the order one
// step calls them:
//   forward   qkv   AllGatherGemm      K = h,          N = (h + 2 Hkv D) / t
//             proj  GemmReduceScatter  K = h / t,      N = h
//             fc1   AllGatherGemm      K = h,          N = g f / t
//             fc2   GemmReduceScatter  K = f / t,      N = h
//   backward  fc2-dgrad   AllGatherGemm of dY       K = h,           N = f / t
//             fc2-wgrad   AllGatherWgrad of dY      K = h,           N = f / t      (*)
//             fc1-dgrad   GemmReduceScatter         K = g f / t,     N = h
//             fc1-wgrad   AllGatherWgrad of LN out  K = h,           N = g f / t
//             proj-dgrad  AllGatherGemm of dY       K = h,           N = h / t
//             proj-wgrad  AllGatherWgrad of dY      K = h,           N = h / t      (*)
//             qkv-dgrad   GemmReduceScatter         K = qkv N,       N = h
//             qkv-wgrad   AllGatherWgrad of LN out  K = h,           N = qkv N
// Dimensions are those of the tp_ops.h call (TpGemmDims: M all ranks' tokens, N the output
// columns, K the reduction or, for AllGatherWgrad, the gathered operand's columns).
//
// (*) proj-wgrad and fc2-wgrad need the dY that their dgrad has just gathered. Megatron-LM
// keeps that gathered dY and computes dW = X^T dY as a GEMM with no collective; the table marks
// them `reuses_dgrad_gather`. Compass's planner models them that way (GEMM only, in the
// dW = X^T dY orientation: N and K swapped, see GemmOnlyDims), while SmallGpt's simple
// implementation gathers dY again through AllGatherWgrad (giving dW^T), so an overlap strategy
// runs on that collective too. Both readings are deliberate; the flag keeps them visible.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/tp_ops.h"

namespace tessera::models {

// Which TensorParallelOps call an operator is.
enum class TpOpKind { kAllGatherGemm, kGemmReduceScatter, kAllGatherWgrad };

// The sizes the table needs (a model's shape, the TP degree and the step's tokens).
struct TpLayerShape {
  int64_t hidden = 0, ffn = 0, heads = 0, kv_heads = 0;
  bool gated_mlp = false;
  int tp = 1;
  int64_t tokens = 0;  // M: tokens of all ranks
};

struct TpLayerOp {
  std::string name;  // "qkv", "fc2-dgrad", "proj-wgrad", ...
  TpOpKind kind = TpOpKind::kAllGatherGemm;
  TpGemmDims dims;  // as the tp_ops.h call takes them
  // proj-wgrad, fc2-wgrad: the dY gathered for the dgrad can be reused, so Megatron needs no
  // collective here (see the header comment for who does what).
  bool reuses_dgrad_gather = false;
  bool needs_collective() const { return !reuses_dgrad_gather; }
};

// The twelve operators in call order. Preconditions (the callers validate with their own
// messages): every size >= 1, kv_heads divides heads, heads divides hidden, and t divides what
// an operator it uses splits across ranks (qkv: h + 2 Hkv D; proj: h; fc1: g f; fc2: f), and
// tokens. Compass's model shapes use every operator, so t divides heads, kv_heads, hidden and
// ffn there; its benchmark grid (compass/engine/overlap_grid.h) checks only the operators it
// sweeps.
std::vector<TpLayerOp> MegatronTpLayerOps(const TpLayerShape& s);

// The GEMM-only form of an operator that reuses its dgrad's gather: dW = X^T dY with the
// gathered dY (M, K) and X (M, N) of the call, i.e. the call's dims with N and K swapped.
TpGemmDims GemmOnlyDims(const TpLayerOp& op);

}  // namespace tessera::models
