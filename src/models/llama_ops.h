// The row-wise pieces of a Llama decoder layer that LlamaModel::Forward (llama.h) and the
// batched decode step (llama_batch_decode.h) share, so both compute bit-identical values:
//   RmsNormRows     y = x / sqrt(mean(x^2) + eps) * w per row (the sum of squares in double);
//   RopeTables      cos and sin (rows, D/2) of position_r * inv_freq_i (fp32 product, as
//                   Hugging Face computes it), for one position per row;
//   ApplyRope       rotate_half RoPE of x (rows, heads, D) in place with those tables (row r's
//                   heads all use row r of the tables);
//   LlamaLinear     y (rows, out) = x (rows, in) W^T + beta y, W (out, in) row-major, on
//                   kernels/gemm.h;
//   SwiGluInPlace   gate[i] = silu(gate[i]) * up[i].
// All tensors fp32, row-major, contiguous, owned by the caller. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace tessera::models {

void RmsNormRows(const float* x, int64_t rows, int64_t width, const float* w, double eps, float* y);

// inv_freq: LlamaConfig::RopeInvFreq() (D/2 entries). cos_t and sin_t hold positions.size() *
// inv_freq.size() floats.
void RopeTables(std::span<const int64_t> positions, const std::vector<double>& inv_freq,
                float* cos_t, float* sin_t);

void ApplyRope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const float* cos_t,
               const float* sin_t);

[[nodiscard]] core::Status LlamaLinear(const float* x, int64_t rows, int64_t in,
                                       const std::vector<float>& w, int64_t out, float beta,
                                       float* y);

void SwiGluInPlace(float* gate, const float* up, int64_t n);

}  // namespace tessera::models
