// Modeled GEMM time on a device SKU, for paper-scale planning where no profile exists: the
// (M, N) output is cut into 128 x 128 tiles spread over the SMs in waves; a wave runs one
// tile per SM over the whole K at the SM's share of the achieved peak (bf16 peak x
// compute_efficiency / SMs), so a last partial wave costs a whole wave (wave quantisation);
// the GEMM takes at least its bytes (bf16 A, B and C once each) over the memory bandwidth.
// Without an SM count (device field sm_count 0): FLOPs / achieved peak, the same floor.
// RooflineGemmSeconds is that plain roofline for any device: the model for skinny decode GEMMs
// (m = a batch of tokens), which kernels split along K instead of filling 128-row tiles.
// Modeled, never measured: outputs that use it say so.
#pragma once

#include <cstdint>

#include "hw/device.h"

namespace tessera::hw {

inline constexpr int64_t kGemmTile = 128;

// Seconds for C (m, n) = A (m, k) B (k, n) in bf16 with fp32 accumulation; 0 for an empty
// GEMM.
double ModeledGemmSeconds(const Device& d, int64_t m, int64_t n, int64_t k);
// max(2 m n k / (bf16 peak x compute_efficiency), bf16 bytes of A, B and C / bandwidth); 0 for
// an empty GEMM.
double RooflineGemmSeconds(const Device& d, int64_t m, int64_t n, int64_t k);

}  // namespace tessera::hw
