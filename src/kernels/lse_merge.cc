#include "kernels/lse_merge.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/infinity.h"

namespace tessera::kernels {
namespace {

using core::InvalidArgument;
using core::Status;

using core::kNegInf;

Status ValidateMerge(int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                     std::initializer_list<const float*> ptrs) {
  if (num_tokens < 0) {
    return InvalidArgument("merge.num_tokens: got " + std::to_string(num_tokens) +
                           ", must be >= 0");
  }
  if (num_heads < 1) {
    return InvalidArgument("merge.num_heads: got " + std::to_string(num_heads) + ", must be >= 1");
  }
  if (head_dim < 1) {
    return InvalidArgument("merge.head_dim: got " + std::to_string(head_dim) + ", must be >= 1");
  }
  if (num_tokens > 0) {
    for (const float* p : ptrs) {
      if (p == nullptr) return InvalidArgument("merge: null tensor pointer with num_tokens > 0");
    }
  }
  return Status::Ok();
}

// Merges row by row; each output element is written after both inputs of that element are
// read, so exact aliasing of an output with an input is safe.
void MergeRows(int64_t rows, int64_t head_dim, const float* o_a, const float* lse_a,
               const float* o_b, const float* lse_b, float* o, float* lse) {
  for (int64_t r = 0; r < rows; ++r) {
    const float la = lse_a[r], lb = lse_b[r];
    const float mx = std::max(la, lb);
    const float* a_row = o_a + r * head_dim;
    const float* b_row = o_b + r * head_dim;
    float* out_row = o + r * head_dim;
    if (mx == kNegInf) {
      std::fill_n(out_row, head_dim, 0.0f);
      lse[r] = kNegInf;
      continue;
    }
    if (la == kNegInf || lb == kNegInf) {  // one side has no keys: the other's result, unread
      const float* src = la == kNegInf ? b_row : a_row;
      if (src != out_row) std::copy_n(src, head_dim, out_row);
      lse[r] = mx;
      continue;
    }
    // One of the two exponents is exp(0) = 1, so the sum is in [1, 2]: no overflow.
    const float ea = std::exp(la - mx), eb = std::exp(lb - mx);
    const float sum = ea + eb;
    const float wa = ea / sum, wb = eb / sum;
    for (int64_t x = 0; x < head_dim; ++x) out_row[x] = wa * a_row[x] + wb * b_row[x];
    lse[r] = mx + std::log(sum);
  }
}

}  // namespace

Status MergeAttentionPartials(int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                              const float* o_a, const float* lse_a, const float* o_b,
                              const float* lse_b, float* o, float* lse) {
  RETURN_IF_ERROR(ValidateMerge(num_tokens, num_heads, head_dim, {o_a, lse_a, o_b, lse_b, o, lse}));
  MergeRows(num_tokens * num_heads, head_dim, o_a, lse_a, o_b, lse_b, o, lse);
  return Status::Ok();
}

Status MergeAttentionPartialsInPlace(int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                                     float* o_acc, float* lse_acc, const float* o_part,
                                     const float* lse_part) {
  return MergeAttentionPartials(num_tokens, num_heads, head_dim, o_acc, lse_acc, o_part, lse_part,
                                o_acc, lse_acc);
}

}  // namespace tessera::kernels
