// Forward and hand-written backward of the element-wise and row-wise operations of SmallDit
// (small_dit.h): linear layers via GEMM, LayerNorm without affine parameters, adaLN modulation
// and gated residuals broadcast per sequence, GELU (tanh form), SiLU, sinusoidal embeddings.
//
// Layouts: every activation is fp32, row-major (rows, width). A linear weight is stored
// (in, out) row-major, so y = x W + b; `ldw` is the row stride of W (>= out), which lets a
// caller address a column slice of a wider weight (e.g. the q, k or v part of W_qkv).
// Per-sequence tensors (shift, scale, gate) are (num_seqs, ...) with row stride `ld_mod` and
// are broadcast to the tokens [cu_seqlens[s], cu_seqlens[s + 1]) of sequence s.
// Backward functions ACCUMULATE into parameter-style gradients (dw, db, dshift, dscale, dgate)
// and write or accumulate into input gradients as their `accumulate` flag says.
//
// Sizes are trusted (callers validate them); buffers must not alias unless stated.
// Thread-safety: pure functions on caller-owned memory; GEMMs use the BLAS's threads.
#pragma once

#include <cstdint>
#include <span>

namespace tessera::models::ops {

// y (n, out; row stride ldy) = x (n, in) W (in, out; ldw) + b (out, may be null).
void LinearForward(const float* x, int64_t n, int64_t in, const float* w, int64_t ldw,
                   const float* b, int64_t out, float* y, int64_t ldy);

// dw (in, out; ldw) += x^T dy;  db (out) += column sums of dy (skipped if db is null);
// dx (n, in) = dy W^T (or += when accumulate_dx; skipped if dx is null).
void LinearBackward(const float* x, int64_t n, int64_t in, const float* w, int64_t ldw, int64_t out,
                    const float* dy, int64_t ldy, float* dw, float* db, float* dx,
                    bool accumulate_dx);

// y = (x - mean) * rstd per row, rstd = 1 / sqrt(var + eps) (biased variance). Writes y
// (n, width) and rstd (n).
void LayerNormForward(const float* x, int64_t n, int64_t width, float eps, float* y, float* rstd);

// dx = rstd * (dy - mean(dy) - y * mean(dy * y)) per row, from the normalised y and rstd.
void LayerNormBackward(const float* dy, const float* y, const float* rstd, int64_t n, int64_t width,
                       float* dx, bool accumulate_dx);

// y[t] = x[t] * (1 + scale[s]) + shift[s] for the tokens t of each sequence s.
void ModulateForward(const float* x, std::span<const int64_t> cu_seqlens, int64_t width,
                     const float* shift, const float* scale, int64_t ld_mod, float* y);

// dx = dy * (1 + scale[s]) (written); dshift[s] += sum_t dy; dscale[s] += sum_t dy * x.
void ModulateBackward(const float* dy, const float* x, std::span<const int64_t> cu_seqlens,
                      int64_t width, const float* scale, int64_t ld_mod, float* dx, float* dshift,
                      float* dscale);

// h[t] += gate[s] * y[t].
void GatedResidualForward(const float* y, std::span<const int64_t> cu_seqlens, int64_t width,
                          const float* gate, int64_t ld_mod, float* h);

// dy = gate[s] * dh (written); dgate[s] += sum_t dh * y.
void GatedResidualBackward(const float* dh, const float* y, std::span<const int64_t> cu_seqlens,
                           int64_t width, const float* gate, int64_t ld_mod, float* dy,
                           float* dgate);

// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). GELU and SiLU
// use a branch-free polynomial exp (absolute error of tanh / sigmoid below ~3e-7).
void GeluForward(const float* x, int64_t count, float* y);
// dx = dy * gelu'(x).
void GeluBackward(const float* dy, const float* x, int64_t count, float* dx);

// SiLU: x * sigmoid(x).
void SiluForward(const float* x, int64_t count, float* y);
// dx = dy * silu'(x) (written, or accumulated when accumulate_dx).
void SiluBackward(const float* dy, const float* x, int64_t count, float* dx, bool accumulate_dx);

// Sinusoidal embedding of scalars (dim even): out[i, j] = cos(v_i * f_j) for j < dim/2 and
// sin(v_i * f_{j - dim/2}) after, f_j = exp(-ln(max_period) * j / (dim/2)). Used for the
// timestep (v = 1000 t) and for token positions.
void SinusoidalEmbedding(const float* values, int64_t n, int64_t dim, float max_period, float* out);

// h[t] += sinusoidal embedding (max period 10000) of t's position within its sequence:
// position_offsets[s] + (t - cu_seqlens[s]) for segment s (offsets empty: all 0). Offsets let
// a segment be a chunk of a longer sequence (a rank's share under sequence parallelism).
void AddPositionEmbedding(std::span<const int64_t> cu_seqlens,
                          std::span<const int64_t> position_offsets, int64_t width, float* h);

// Column sums: out (cols) += sum over rows of x (rows, cols; ldx).
void AccumulateColumnSums(const float* x, int64_t rows, int64_t cols, int64_t ldx, float* out);

}  // namespace tessera::models::ops
