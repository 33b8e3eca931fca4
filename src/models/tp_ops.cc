#include "models/tp_ops.h"

#include "kernels/gemm.h"

namespace tessera::models {

using kernels::Transpose;

core::Status LocalTpOps::AllGatherGemm(const std::string&, const TpGemmDims& d, const float* x,
                                       const float* w, float* y) {
  return kernels::Gemm(Transpose::kNo, Transpose::kNo, d.m, d.n, d.k, 1.0f, x, d.k, w, d.n, 0.0f, y,
                       d.n);
}

core::Status LocalTpOps::GemmReduceScatter(const std::string&, const TpGemmDims& d, const float* x,
                                           const float* w, float* y) {
  return kernels::Gemm(Transpose::kNo, Transpose::kNo, d.m, d.n, d.k, 1.0f, x, d.k, w, d.n, 0.0f, y,
                       d.n);
}

core::Status LocalTpOps::AllGatherWgrad(const std::string&, const TpGemmDims& d, const float* x,
                                        const float* dy, float* dw) {
  return kernels::Gemm(Transpose::kYes, Transpose::kNo, d.k, d.n, d.m, 1.0f, x, d.k, dy, d.n, 0.0f,
                       dw, d.n);
}

}  // namespace tessera::models
