// Single-precision GEMM through a tuned library, plus a naive reference.
//
// All matrices are ROW-MAJOR fp32. Gemm computes
//     C = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T,
// where op(A) is (m, k), op(B) is (k, n) and C is (m, n). Leading dimensions are in elements
// (floats) between consecutive rows as stored: A is stored (m, k) with lda >= k when
// trans_a == kNo and (k, m) with lda >= m when trans_a == kYes; likewise for B; ldc >= n.
// When beta == 0, C is not read (NaNs in C do not propagate). When k == 0 or alpha == 0,
// C = beta * C.
//
// Backends: OpenBLAS (cblas_sgemm) is always built in; oneDNN (dnnl_sgemm) is built in when
// libdnnl-dev is installed (CMake option TESSERA_USE_ONEDNN, default ON) and is then the
// default, because it is ~1.9x faster single-threaded on the development machine (measured
// with bench_attention on the 2-core AMD EPYC VM: oneDNN 2.6.3 192-206 GFLOP/s at 2048^3,
// 4096x4096x128 and 128x512x128, OpenBLAS 0.3.21 92-104 GFLOP/s on the same shapes; oneDNN
// uses AVX-512 kernels while OpenBLAS is pinned to its Haswell kernels by
// OPENBLAS_CORETYPE=Haswell). Both backends are tested against the naive reference.
//
// Ownership: callers own all buffers; nothing is retained. Thread-safety: Gemm is reentrant.
// SetGemmBackend and SetBlasNumThreads change process-wide state; call them once at start-up
// (each MPI rank owns one core, so ranks call SetBlasNumThreads(1)). The thread count holds on
// every thread: OpenMP's team size is a per-thread setting, so a GEMM on a thread other than
// the caller's (a transport's delivery thread, a serving engine's) first applies it there --
// without that, such a thread would run oneDNN with an OpenMP team of every core, whose
// spinning workers take the cores the other processes of a run need.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tessera::kernels {

enum class Transpose { kNo, kYes };

enum class GemmBackend { kOpenBlas, kOneDnn };

// C = alpha * op(A) op(B) + beta * C with the current backend. Returns InvalidArgument (naming
// the argument) for negative or too-large sizes (> INT32_MAX), too-small leading dimensions, or
// null pointers for non-empty operands; Internal if the backend reports a failure.
[[nodiscard]] core::Status Gemm(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n,
                                int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                                int64_t ldb, float beta, float* c, int64_t ldc);

// Same contract as Gemm with arguments already validated by the caller (CHECK-fails on
// violation in debug builds only, and on a backend failure). Used by the attention kernels.
void GemmUnchecked(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k,
                   float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                   float beta, float* c, int64_t ldc);

// Naive triple loop with double accumulation; same contract and validation as Gemm. The test
// oracle for Gemm.
[[nodiscard]] core::Status GemmReference(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n,
                                         int64_t k, float alpha, const float* a, int64_t lda,
                                         const float* b, int64_t ldb, float beta, float* c,
                                         int64_t ldc);

// Whether `backend` is compiled into this build (OpenBLAS always is).
bool GemmBackendAvailable(GemmBackend backend);
// Selects the backend for Gemm, GemmUnchecked and the attention kernels (process-wide).
// FailedPrecondition if it is not compiled in.
[[nodiscard]] core::Status SetGemmBackend(GemmBackend backend);
GemmBackend CurrentGemmBackend();
const char* GemmBackendName(GemmBackend backend);  // "openblas" or "onednn"

// Sets the number of threads both backends may use: OpenBLAS's pool, and the OpenMP team size
// (oneDNN's threading runtime) of every thread that runs a GEMM from now on. n >= 1.
[[nodiscard]] core::Status SetBlasNumThreads(int n);
// The number of threads OpenBLAS currently uses.
int BlasNumThreads();
// The OpenMP team size a oneDNN GEMM on the calling thread uses (1 without OpenMP).
int GemmThreadsOnThisThread();
// A one-line description of the backends, e.g. "openblas: OpenBLAS 0.3.21 ... (core Haswell);
// onednn: oneDNN 2.6.3".
std::string BlasDescription();

}  // namespace tessera::kernels
