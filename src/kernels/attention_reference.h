// Plain reference attention (forward with LSE, backward) and LSE merge: the test oracle for the
// tiled kernels in attention.h and lse_merge.h. Same shapes, layouts and semantics as those
// (see attention_shape.h and attention.h), including the causal mask of AttentionShape::causal
// (a row's masked keys are left out of its sums, i.e. get weight exactly 0): direct loops, one
// query row at a time, with all sums accumulated in double. T is float or double (double lets
// tests take finite differences). O(Lq * Lk * D) per head with no blocking: use on small
// problems only.
// Thread-safety: reentrant.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "kernels/attention_shape.h"

namespace tessera::kernels {

// o (Tq_total, H, D), lse (Tq_total, H) from q (Tq_total, H, D), k, v (Tk_total, H, D).
template <typename T>
[[nodiscard]] core::Status AttentionForwardReference(const AttentionShape& shape, const T* q,
                                                     const T* k, const T* v, T* o, T* lse);

// Gradients from the given o, d_o and lse (which may be a global, merged LSE). dq, dk, dv are
// written, or accumulated into when the corresponding flag is set.
template <typename T>
[[nodiscard]] core::Status AttentionBackwardReference(const AttentionShape& shape, const T* q,
                                                      const T* k, const T* v, const T* o,
                                                      const T* d_o, const T* lse, T* dq, T* dk,
                                                      T* dv, bool accumulate_dq = false,
                                                      bool accumulate_dkv = false);

// (o, lse) = merge of two partial results over disjoint key sets for the same queries:
// o_* (num_tokens, H, D), lse_* (num_tokens, H). Outputs may alias either input.
template <typename T>
[[nodiscard]] core::Status MergeAttentionReference(int64_t num_tokens, int64_t num_heads,
                                                   int64_t head_dim, const T* o_a, const T* lse_a,
                                                   const T* o_b, const T* lse_b, T* o, T* lse);

}  // namespace tessera::kernels
