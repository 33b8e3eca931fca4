// Merge of partial attention results by log-sum-exp.
//
// Two attention results (o_a, lse_a) and (o_b, lse_b) for the SAME queries over DISJOINT key
// sets A and B combine into the result over A u B:
//   lse = log(exp(lse_a) + exp(lse_b)),   o = exp(lse_a - lse) o_a + exp(lse_b - lse) o_b.
// A row whose lse is -inf (no keys) contributes nothing and its o is not read (it may hold
// garbage); if both are -inf the result is o = 0, lse = -inf. Ring attention folds each key chunk's
// partial into a running result with MergeAttentionPartialsInPlace; merging is associative and
// commutative up to rounding.
//
// Layouts match attention_shape.h: o_* (num_tokens, H, D), lse_* (num_tokens, H), row-major
// and contiguous, so a token range [t0, t1) is a pointer offset (o + t0*H*D, lse + t0*H).
// Outputs may alias either input exactly (same pointer), not partially.
// Thread-safety: reentrant; caller owns all buffers.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace tessera::kernels {

// (o, lse) = merge((o_a, lse_a), (o_b, lse_b)). Returns InvalidArgument for num_tokens < 0,
// num_heads or head_dim < 1, or null pointers with num_tokens > 0.
[[nodiscard]] core::Status MergeAttentionPartials(int64_t num_tokens, int64_t num_heads,
                                                  int64_t head_dim, const float* o_a,
                                                  const float* lse_a, const float* o_b,
                                                  const float* lse_b, float* o, float* lse);

// (o_acc, lse_acc) = merge((o_acc, lse_acc), (o_part, lse_part)). Start a ring with
// o_acc = 0 and lse_acc = -inf, or with the first chunk's result.
[[nodiscard]] core::Status MergeAttentionPartialsInPlace(int64_t num_tokens, int64_t num_heads,
                                                         int64_t head_dim, float* o_acc,
                                                         float* lse_acc, const float* o_part,
                                                         const float* lse_part);

}  // namespace tessera::kernels
