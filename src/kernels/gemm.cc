#include "kernels/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <string>

#ifdef TESSERA_HAVE_ONEDNN
#include <dnnl.h>
#ifdef TESSERA_HAVE_OPENMP
#include <omp.h>
#endif
#endif

namespace tessera::kernels {
namespace {

using core::InvalidArgument;
using core::Status;

Status CheckDim(const char* name, int64_t value) {
  if (value < 0 || value > INT_MAX) {
    return InvalidArgument(std::string("gemm.") + name + ": got " + std::to_string(value) +
                           ", must be in [0, " + std::to_string(INT_MAX) + "]");
  }
  return Status::Ok();
}

Status CheckLd(const char* name, int64_t ld, int64_t min_ld) {
  min_ld = std::max<int64_t>(1, min_ld);
  if (ld < min_ld || ld > INT_MAX) {
    return InvalidArgument(std::string("gemm.") + name + ": got " + std::to_string(ld) +
                           ", must be in [" + std::to_string(min_ld) + ", " +
                           std::to_string(INT_MAX) + "]");
  }
  return Status::Ok();
}

Status ValidateGemm(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k,
                    const float* a, int64_t lda, const float* b, int64_t ldb, const float* c,
                    int64_t ldc) {
  RETURN_IF_ERROR(CheckDim("m", m));
  RETURN_IF_ERROR(CheckDim("n", n));
  RETURN_IF_ERROR(CheckDim("k", k));
  RETURN_IF_ERROR(CheckLd("lda", lda, trans_a == Transpose::kNo ? k : m));
  RETURN_IF_ERROR(CheckLd("ldb", ldb, trans_b == Transpose::kNo ? n : k));
  RETURN_IF_ERROR(CheckLd("ldc", ldc, n));
  const bool c_used = m > 0 && n > 0;
  const bool ab_used = c_used && k > 0;
  if (ab_used && a == nullptr) return InvalidArgument("gemm.a: null pointer for a non-empty A");
  if (ab_used && b == nullptr) return InvalidArgument("gemm.b: null pointer for a non-empty B");
  if (c_used && c == nullptr) return InvalidArgument("gemm.c: null pointer for a non-empty C");
  return Status::Ok();
}

// C = beta * C over an (m, n) block, writing zeros (not 0 * C) when beta == 0.
void ScaleC(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (beta == 0.0f) {
      std::fill(row, row + n, 0.0f);
    } else if (beta != 1.0f) {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

std::atomic<GemmBackend>& BackendState() {
#ifdef TESSERA_HAVE_ONEDNN
  static std::atomic<GemmBackend> backend{GemmBackend::kOneDnn};
#else
  static std::atomic<GemmBackend> backend{GemmBackend::kOpenBlas};
#endif
  return backend;
}

// SetBlasNumThreads's count (0: never set, the libraries' defaults), applied to each thread's
// OpenMP team size before its first GEMM after a change.
std::atomic<int>& WantedThreads() {
  static std::atomic<int> wanted{0};
  return wanted;
}

void ApplyThreadCount() {
#ifdef TESSERA_HAVE_OPENMP
  thread_local int applied = 0;
  const int wanted = WantedThreads().load(std::memory_order_relaxed);
  if (wanted > 0 && applied != wanted) {
    omp_set_num_threads(wanted);
    applied = wanted;
  }
#endif
}

// Runs the GEMM on the current backend; m, n, k > 0. Returns false if the backend failed.
bool RunBackend(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
#ifdef TESSERA_HAVE_ONEDNN
  if (BackendState().load(std::memory_order_relaxed) == GemmBackend::kOneDnn) {
    ApplyThreadCount();
    return dnnl_sgemm(trans_a == Transpose::kNo ? 'N' : 'T', trans_b == Transpose::kNo ? 'N' : 'T',
                      m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
  }
#endif
  cblas_sgemm(CblasRowMajor, trans_a == Transpose::kNo ? CblasNoTrans : CblasTrans,
              trans_b == Transpose::kNo ? CblasNoTrans : CblasTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  return true;
}

}  // namespace

void GemmUnchecked(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k,
                   float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                   float beta, float* c, int64_t ldc) {
#ifndef NDEBUG
  Status st = ValidateGemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  CHECK(st.ok()) << st.ToString();
#endif
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0f) {
    ScaleC(m, n, beta, c, ldc);
    return;
  }
  const bool ok = RunBackend(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  CHECK(ok) << "sgemm failed in backend " << GemmBackendName(CurrentGemmBackend());
}

Status Gemm(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
            int64_t ldc) {
  RETURN_IF_ERROR(ValidateGemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc));
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0 || alpha == 0.0f) {
    ScaleC(m, n, beta, c, ldc);
    return Status::Ok();
  }
  if (!RunBackend(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) {
    return core::Internal(std::string("gemm: backend ") + GemmBackendName(CurrentGemmBackend()) +
                          " failed for m=" + std::to_string(m) + " n=" + std::to_string(n) +
                          " k=" + std::to_string(k));
  }
  return Status::Ok();
}

Status GemmReference(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k,
                     float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                     float beta, float* c, int64_t ldc) {
  RETURN_IF_ERROR(ValidateGemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = trans_a == Transpose::kNo ? a[i * lda + p] : a[p * lda + i];
        const double bv = trans_b == Transpose::kNo ? b[p * ldb + j] : b[j * ldb + p];
        acc += av * bv;
      }
      float& out = c[i * ldc + j];
      const double prior = beta == 0.0f ? 0.0 : static_cast<double>(beta) * out;
      out = static_cast<float>(static_cast<double>(alpha) * acc + prior);
    }
  }
  return Status::Ok();
}

Status SetBlasNumThreads(int n) {
  if (n < 1) {
    return InvalidArgument("blas threads: got " + std::to_string(n) + ", must be >= 1");
  }
  openblas_set_num_threads(n);
  WantedThreads().store(n, std::memory_order_relaxed);
#if defined(TESSERA_HAVE_ONEDNN) && defined(TESSERA_HAVE_OPENMP)
  omp_set_num_threads(n);
#endif
  return Status::Ok();
}

int BlasNumThreads() { return openblas_get_num_threads(); }

int GemmThreadsOnThisThread() {
#ifdef TESSERA_HAVE_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

bool GemmBackendAvailable(GemmBackend backend) {
#ifdef TESSERA_HAVE_ONEDNN
  return backend == GemmBackend::kOpenBlas || backend == GemmBackend::kOneDnn;
#else
  return backend == GemmBackend::kOpenBlas;
#endif
}

Status SetGemmBackend(GemmBackend backend) {
  if (!GemmBackendAvailable(backend)) {
    return core::FailedPrecondition(std::string("gemm backend ") + GemmBackendName(backend) +
                                    " is not compiled in (install libdnnl-dev and reconfigure)");
  }
  BackendState().store(backend);
  return Status::Ok();
}

GemmBackend CurrentGemmBackend() { return BackendState().load(); }

const char* GemmBackendName(GemmBackend backend) {
  return backend == GemmBackend::kOneDnn ? "onednn" : "openblas";
}

std::string BlasDescription() {
  const char* config = openblas_get_config();
  const char* core = openblas_get_corename();
  std::string out = std::string("openblas: ") + (config != nullptr ? config : "OpenBLAS") +
                    " (core " + (core != nullptr ? core : "?") + ")";
#ifdef TESSERA_HAVE_ONEDNN
  const dnnl_version_t* v = dnnl_version();
  out += "; onednn: oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
#endif
  return out + "; current: " + GemmBackendName(CurrentGemmBackend());
}

}  // namespace tessera::kernels
