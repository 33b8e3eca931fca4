// TensorParallelOps: the tensor-parallel operators of a Megatron layer with sequence
// parallelism, as a model (small_gpt.h) calls them, so that an engine that overlaps each
// collective with its GEMM (Compass's strategy registry) can run them without the model
// knowing how. On t ranks, rank r holds rows [r M/t, (r+1) M/t) of the token axis (M tokens).
// All fp32, row-major, contiguous:
//
//   AllGatherGemm       x (M/t, K) this rank's rows, w (K, N)      y (M, N) = AG(x) w
//   GemmReduceScatter   x (M, K), w (K, N)                         y (M/t, N) = rows r of
//                                                                  sum over ranks of x w
//   AllGatherWgrad      x (M/t, K) this rank's rows, dy (M, N)     dw (K, N) = AG(x)^T dy
//   AllReduceSum        in place: the sum over ranks (gradients of replicated weights, loss)
//
// Outputs are written, not accumulated, and must not alias inputs. `name` identifies the
// operator of the layer ("qkv", "fc2-dgrad", "proj-wgrad", ...) so an engine can pick a
// strategy per operator; it is informational for the local implementation.
// With t = 1 every collective is the identity: LocalTpOps is the single-process twin.
// Thread-safety: one thread at a time per instance; collective implementations must be called
// in the same order on every rank.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace tessera::models {

struct TpGemmDims {
  int64_t m = 0;  // tokens of all ranks
  int64_t n = 0;  // output columns
  int64_t k = 0;  // reduction dimension (AllGatherWgrad: the gathered x's columns)
};

class TensorParallelOps {
 public:
  virtual ~TensorParallelOps() = default;
  virtual int tp() const = 0;
  virtual int rank() const = 0;
  [[nodiscard]] virtual core::Status AllGatherGemm(const std::string& name, const TpGemmDims& d,
                                                   const float* x, const float* w, float* y) = 0;
  [[nodiscard]] virtual core::Status GemmReduceScatter(const std::string& name, const TpGemmDims& d,
                                                       const float* x, const float* w,
                                                       float* y) = 0;
  [[nodiscard]] virtual core::Status AllGatherWgrad(const std::string& name, const TpGemmDims& d,
                                                    const float* x, const float* dy, float* dw) = 0;
  [[nodiscard]] virtual core::Status AllReduceSum(std::span<float> data) = 0;
  [[nodiscard]] virtual core::Status AllReduceSum(std::span<double> data) = 0;
};

// t = 1: each operator is one kernels::Gemm; the reductions do nothing.
class LocalTpOps final : public TensorParallelOps {
 public:
  int tp() const override { return 1; }
  int rank() const override { return 0; }
  core::Status AllGatherGemm(const std::string& name, const TpGemmDims& d, const float* x,
                             const float* w, float* y) override;
  core::Status GemmReduceScatter(const std::string& name, const TpGemmDims& d, const float* x,
                                 const float* w, float* y) override;
  core::Status AllGatherWgrad(const std::string& name, const TpGemmDims& d, const float* x,
                              const float* dy, float* dw) override;
  core::Status AllReduceSum(std::span<float>) override { return core::Status::Ok(); }
  core::Status AllReduceSum(std::span<double>) override { return core::Status::Ok(); }
};

}  // namespace tessera::models
