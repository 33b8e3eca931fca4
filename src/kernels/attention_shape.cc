#include "kernels/attention_shape.h"

#include <climits>
#include <string>

namespace tessera::kernels {
namespace {

using core::InvalidArgument;
using core::Status;

Status ValidateOffsets(const char* name, std::span<const int64_t> cu) {
  if (cu.empty()) {
    return InvalidArgument(std::string("attention.") + name +
                           ": got an empty array, must hold nseq + 1 >= 1 offsets");
  }
  if (cu[0] != 0) {
    return InvalidArgument(std::string("attention.") + name + "[0]: got " + std::to_string(cu[0]) +
                           ", must be 0");
  }
  for (size_t i = 1; i < cu.size(); ++i) {
    if (cu[i] < cu[i - 1]) {
      return InvalidArgument(std::string("attention.") + name + "[" + std::to_string(i) +
                             "]: got " + std::to_string(cu[i]) + ", must be >= " + name + "[" +
                             std::to_string(i - 1) + "] = " + std::to_string(cu[i - 1]) +
                             " (sequence lengths cannot be negative)");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateAttentionShape(const AttentionShape& shape) {
  if (shape.num_heads < 1) {
    return InvalidArgument("attention.num_heads: got " + std::to_string(shape.num_heads) +
                           ", must be >= 1");
  }
  if (shape.head_dim < 1) {
    return InvalidArgument("attention.head_dim: got " + std::to_string(shape.head_dim) +
                           ", must be >= 1");
  }
  if (shape.num_heads > INT_MAX / shape.head_dim) {
    return InvalidArgument(
        "attention.num_heads * head_dim: got " + std::to_string(shape.num_heads) + " * " +
        std::to_string(shape.head_dim) + ", must be <= " + std::to_string(INT_MAX));
  }
  RETURN_IF_ERROR(ValidateOffsets("cu_seqlens_q", shape.cu_seqlens_q));
  RETURN_IF_ERROR(ValidateOffsets("cu_seqlens_k", shape.cu_seqlens_k));
  if (shape.cu_seqlens_q.size() != shape.cu_seqlens_k.size()) {
    return InvalidArgument("attention.cu_seqlens_k: got " +
                           std::to_string(shape.cu_seqlens_k.size()) +
                           " offsets, must equal cu_seqlens_q's " +
                           std::to_string(shape.cu_seqlens_q.size()) + " (one per sequence + 1)");
  }
  if (shape.causal) {
    for (int64_t seq = 0; seq < shape.num_seqs(); ++seq) {
      if (shape.seqlen_q(seq) > shape.seqlen_k(seq)) {
        return InvalidArgument(
            "attention.causal: sequence " + std::to_string(seq) + " has " +
            std::to_string(shape.seqlen_q(seq)) + " query tokens but " +
            std::to_string(shape.seqlen_k(seq)) +
            " keys; the causal mask is aligned to the last key, so it needs queries <= keys");
      }
    }
  }
  if (shape.scale.has_value() && !std::isfinite(*shape.scale)) {
    return InvalidArgument("attention.scale: got " + std::to_string(*shape.scale) +
                           ", must be finite");
  }
  return Status::Ok();
}

Status CheckTensorPointer(const char* name, const void* ptr, int64_t num_elements) {
  if (ptr == nullptr && num_elements > 0) {
    return InvalidArgument(std::string("attention.") + name + ": null pointer for a tensor of " +
                           std::to_string(num_elements) + " elements");
  }
  return Status::Ok();
}

}  // namespace tessera::kernels
