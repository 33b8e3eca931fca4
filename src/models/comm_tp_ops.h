// CommTpOps: the tensor-parallel operators of tp_ops.h over a comm::Communicator (the TP group;
// its size is t, its rank r), by the plain reference algorithms, with no overlap:
//   AllGatherGemm      AllGather of x (M/t, K) into (M, K), then one GEMM with w (K, N)
//   GemmReduceScatter  one GEMM x (M, K) w (K, N) into (M, N), then ReduceScatter of its row
//                      blocks (rank r keeps rows [r M/t, (r+1) M/t) summed over ranks)
//   AllGatherWgrad     AllGather of x, then dw (K, N) = AG(x)^T dy
//   AllReduceSum       the communicator's
// Deterministic when the communicator's sums are (the in-process backend sums in rank order and
// every rank gets the same bits) and the GEMMs are (kernels::Gemm on one BLAS thread, as the
// tests set it): the same inputs give the same bits on every run.
// Errors: InvalidArgument naming the operator when M is not a positive multiple of t or a
// size is negative; the communicator's and the GEMM's errors pass through.
// Thread-safety: one thread at a time per instance (the communicator's rule); the gathered and
// full-width scratch buffers are kept between calls.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "models/tp_ops.h"

namespace tessera::models {

class CommTpOps final : public TensorParallelOps {
 public:
  // `comm` must outlive this object.
  explicit CommTpOps(comm::Communicator& comm) : comm_(comm) {}

  int tp() const override { return comm_.size(); }
  int rank() const override { return comm_.rank(); }
  core::Status AllGatherGemm(const std::string& name, const TpGemmDims& d, const float* x,
                             const float* w, float* y) override;
  core::Status GemmReduceScatter(const std::string& name, const TpGemmDims& d, const float* x,
                                 const float* w, float* y) override;
  core::Status AllGatherWgrad(const std::string& name, const TpGemmDims& d, const float* x,
                              const float* dy, float* dw) override;
  core::Status AllReduceSum(std::span<float> data) override;
  core::Status AllReduceSum(std::span<double> data) override;

 private:
  core::Status CheckDims(const std::string& name, const TpGemmDims& d) const;
  // gathered_ (M, K) = AllGather of x (M/t, K).
  core::Status Gather(const TpGemmDims& d, const float* x);

  comm::Communicator& comm_;
  std::vector<float> gathered_, full_;
};

}  // namespace tessera::models
