// Tiled fp32 attention forward and backward for packed varlen batches (FlashAttention-style
// online softmax on CPU), unmasked or, with shape.causal, causal (bottom-right aligned, see
// attention_shape.h). Shapes and layouts: see attention_shape.h; in short
//   q, o, dq, d_o : (Tq_total, H, D)    k, v, dk, dv : (Tk_total, H, D)    lse : (Tq_total, H)
// all row-major and contiguous. All of a rank's whole sequences go through ONE call.
//
// Forward: for each sequence i, head h and query row t of sequence i,
//   S[t, j] = scale * <q[t, h], k[j, h]> over the keys j of sequence i that row t sees (all of
//             them; with shape.causal only j <= t + lk - lq, 0-based within the sequence),
//   lse[t, h] = log(sum_j exp(S[t, j]))   (natural log; -inf when the sequence has no keys),
//   o[t, h]   = sum_j exp(S[t, j] - lse[t, h]) * v[j, h]   (0 when there are no keys).
// Work: per (sequence, head) the query rows go in tiles of block_q rows and the keys in tiles
// of block_k; S = Q K^T and O += P V are BLAS GEMMs on those tiles (gemm.h), the softmax is a
// vectorised running max / sum, and the (block_q, D) output accumulator is rescaled as the max
// grows. Causal: key tiles wholly after a query tile's diagonal are skipped (neither GEMM runs)
// and the tile that straddles it is clipped to the tile's last visible key, with the masked
// scores inside set to the lowest finite float before the softmax, whose exp is exactly 0; so
// a causal call does about half the work of an unmasked one for lq == lk. The backward skips
// and masks the same tiles (P = 0, hence dS = 0, on masked entries).
// Scratch is allocated once per call, never in the loops, and only as large as the
// call needs (tiles clipped to its longest sequence), so a call of short sequences stays cheap.
// The backward zeroes written gradients per sequence just before accumulating into them.
//
// Backward: takes the forward's o and lse as INPUTS, so that ring attention can run it once per
// key chunk with the GLOBAL o, d_o and lse (lse merged over all chunks, see lse_merge.h); the
// gradients are then exactly the slices of the full-key gradients that belong to that chunk:
//   P = exp(S - lse) (0 where masked), Delta[t, h] = sum_d d_o[t, h, d] * o[t, h, d],
//   dV = P^T dO, dP = dO V^T, dS = P * (dP - Delta), dQ = scale dS K, dK = scale dS^T Q.
// dq is written, or accumulated into (dq += ...) when accumulate_dq is set (ring attention sums
// dQ over key chunks); dk and dv likewise with accumulate_dkv. The causal mask is placed from
// each call's own lengths (j <= t + lk - lq), so a key chunk of a causal sequence gets the mask
// of a sequence ending at that chunk: splitting causal keys over calls is the caller's concern.
//
// FLOP convention (used by the benchmark): forward 4 * Lq * Lk * D per (sequence, head) (two
// GEMMs); backward 10 * Lq * Lk * D (five GEMMs: S recompute, dV, dP, dQ, dK), i.e. 2.5x.
// Causal calls do only the tiles on or below the diagonal (about half for Lq == Lk).
//
// Errors: invalid shapes, null pointers for non-empty tensors, or non-positive tiles return
// InvalidArgument before any output is touched. Outputs must not alias inputs.
// Thread-safety: reentrant; runs on the calling thread, GEMMs use the BLAS's threads (set to 1
// per rank with SetBlasNumThreads).
#pragma once

#include <cstdint>

#include "core/status.h"
#include "kernels/attention_shape.h"

namespace tessera::kernels {

// Tile sizes in tokens. The defaults were picked with bench/kernels/attention_bench.cc on the
// 2-core development machine (measured) for D = 64 and 128.
struct AttentionTiling {
  int64_t block_q = 128;  // query rows per tile
  int64_t block_k = 512;  // keys per tile
};

struct AttentionBackwardOptions {
  bool accumulate_dq = false;   // dq += gradient (else dq = gradient)
  bool accumulate_dkv = false;  // dk += ..., dv += ... (else written)
  AttentionTiling tiling = {.block_q = 128, .block_k = 512};
};

// Fills o (Tq_total, H, D) and lse (Tq_total, H).
[[nodiscard]] core::Status AttentionForward(const AttentionShape& shape, const float* q,
                                            const float* k, const float* v, float* o, float* lse,
                                            const AttentionTiling& tiling = {});

// Fills (or accumulates into) dq (Tq_total, H, D), dk and dv (Tk_total, H, D) from q, k, v,
// the forward output o, its gradient d_o and the log-sum-exp lse (Tq_total, H).
[[nodiscard]] core::Status AttentionBackward(const AttentionShape& shape, const float* q,
                                             const float* k, const float* v, const float* o,
                                             const float* d_o, const float* lse, float* dq,
                                             float* dk, float* dv,
                                             const AttentionBackwardOptions& options = {});

}  // namespace tessera::kernels
