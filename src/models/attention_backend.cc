#include "models/attention_backend.h"

#include "kernels/attention_reference.h"

namespace tessera::models {

core::Status LocalAttentionBackend::Forward(const kernels::AttentionShape& shape, const float* q,
                                            const float* k, const float* v, float* o, float* lse) {
  return kernels::AttentionForward(shape, q, k, v, o, lse, tiling_);
}

core::Status LocalAttentionBackend::Backward(const kernels::AttentionShape& shape, const float* q,
                                             const float* k, const float* v, const float* o,
                                             const float* d_o, const float* lse, float* dq,
                                             float* dk, float* dv) {
  kernels::AttentionBackwardOptions options;
  options.tiling = tiling_;
  return kernels::AttentionBackward(shape, q, k, v, o, d_o, lse, dq, dk, dv, options);
}

core::Status ReferenceAttentionBackend::Forward(const kernels::AttentionShape& shape,
                                                const float* q, const float* k, const float* v,
                                                float* o, float* lse) {
  return kernels::AttentionForwardReference<float>(shape, q, k, v, o, lse);
}

core::Status ReferenceAttentionBackend::Backward(const kernels::AttentionShape& shape,
                                                 const float* q, const float* k, const float* v,
                                                 const float* o, const float* d_o, const float* lse,
                                                 float* dq, float* dk, float* dv) {
  return kernels::AttentionBackwardReference<float>(shape, q, k, v, o, d_o, lse, dq, dk, dv);
}

}  // namespace tessera::models
