#include "models/comm_tp_ops.h"

#include "kernels/gemm.h"

namespace tessera::models {

core::Status CommTpOps::CheckDims(const std::string& name, const TpGemmDims& d) const {
  const int64_t t = tp();
  if (d.m < t || d.m % t != 0 || d.n < 0 || d.k < 0) {
    return core::InvalidArgument("tp operator " + name + ": M " + std::to_string(d.m) + ", N " +
                                 std::to_string(d.n) + ", K " + std::to_string(d.k) +
                                 ": M must be a positive multiple of tp " + std::to_string(t) +
                                 " and N, K non-negative");
  }
  return core::Status::Ok();
}

core::Status CommTpOps::Gather(const TpGemmDims& d, const float* x) {
  gathered_.resize(static_cast<size_t>(d.m * d.k));
  const int64_t local = d.m / tp() * d.k;
  return comm_.AllGather(std::span<const float>(x, static_cast<size_t>(local)),
                         std::span<float>(gathered_));
}

core::Status CommTpOps::AllGatherGemm(const std::string& name, const TpGemmDims& d, const float* x,
                                      const float* w, float* y) {
  RETURN_IF_ERROR(CheckDims(name, d));
  RETURN_IF_ERROR(Gather(d, x));
  return kernels::Gemm(kernels::Transpose::kNo, kernels::Transpose::kNo, d.m, d.n, d.k, 1.0f,
                       gathered_.data(), d.k, w, d.n, 0.0f, y, d.n);
}

core::Status CommTpOps::GemmReduceScatter(const std::string& name, const TpGemmDims& d,
                                          const float* x, const float* w, float* y) {
  RETURN_IF_ERROR(CheckDims(name, d));
  full_.resize(static_cast<size_t>(d.m * d.n));
  RETURN_IF_ERROR(kernels::Gemm(kernels::Transpose::kNo, kernels::Transpose::kNo, d.m, d.n, d.k,
                                1.0f, x, d.k, w, d.n, 0.0f, full_.data(), d.n));
  return comm_.ReduceScatter(std::span<const float>(full_),
                             std::span<float>(y, static_cast<size_t>(d.m / tp() * d.n)));
}

core::Status CommTpOps::AllGatherWgrad(const std::string& name, const TpGemmDims& d, const float* x,
                                       const float* dy, float* dw) {
  RETURN_IF_ERROR(CheckDims(name, d));
  RETURN_IF_ERROR(Gather(d, x));
  return kernels::Gemm(kernels::Transpose::kYes, kernels::Transpose::kNo, d.k, d.n, d.m, 1.0f,
                       gathered_.data(), d.k, dy, d.n, 0.0f, dw, d.n);
}

core::Status CommTpOps::AllReduceSum(std::span<float> data) { return comm_.AllReduceSum(data); }

core::Status CommTpOps::AllReduceSum(std::span<double> data) { return comm_.AllReduceSum(data); }

}  // namespace tessera::models
