#include "compass/engine/overlap_context.h"

#include <algorithm>

#include "comm/futex.h"
#include "core/check.h"
#include "core/rng.h"
#include "core/stats.h"

namespace tessera::compass {

const char* ComputeModeName(ComputeMode m) {
  switch (m) {
    case ComputeMode::kReal:
      return "real";
    case ComputeMode::kModeled:
      return "modeled";
    case ComputeMode::kRecord:
      return "record";
  }
  return "?";
}

core::StatusOr<GemmProfile> ProfileGemms(const std::vector<GemmShape>& shapes, int repeats) {
  GemmProfile out;
  core::Rng rng(7);
  std::vector<float> a, b, c;
  for (const GemmShape& s : shapes) {
    if (out.count(s)) continue;
    a.resize(static_cast<size_t>(s.m * s.k));
    b.resize(static_cast<size_t>(s.k * s.n));
    c.assign(static_cast<size_t>(s.m * s.n), 0.0f);
    for (float& v : a) v = static_cast<float>(rng.Uniform(-1, 1));
    for (float& v : b) v = static_cast<float>(rng.Uniform(-1, 1));
    const auto ta = s.trans_a ? kernels::Transpose::kYes : kernels::Transpose::kNo;
    const int64_t lda = s.trans_a ? s.m : s.k;
    std::vector<double> times;
    for (int r = 0; r <= std::max(1, repeats); ++r) {
      const int64_t t0 = comm::NowNs();
      RETURN_IF_ERROR(kernels::Gemm(ta, kernels::Transpose::kNo, s.m, s.n, s.k, 1.0f, a.data(), lda,
                                    b.data(), s.n, 0.0f, c.data(), s.n));
      if (r > 0) times.push_back(static_cast<double>(comm::NowNs() - t0) * 1e-9);
    }
    out[s] = core::Median(times);
  }
  return out;
}

core::Status OverlapContext::Gemm(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a,
                                  int64_t lda, const float* b, int64_t ldb, bool accumulate,
                                  float* c, int64_t ldc) {
  const GemmShape shape{trans_a, m, n, k};
  switch (mode_) {
    case ComputeMode::kReal:
      return kernels::Gemm(trans_a ? kernels::Transpose::kYes : kernels::Transpose::kNo,
                           kernels::Transpose::kNo, m, n, k, 1.0f, a, lda, b, ldb,
                           accumulate ? 1.0f : 0.0f, c, ldc);
    case ComputeMode::kRecord: {
      std::lock_guard<std::mutex> lock(record_mu_);
      recorded_.push_back(shape);
      return core::Status::Ok();
    }
    case ComputeMode::kModeled: {
      const auto it = profile_ ? profile_->find(shape) : GemmProfile::const_iterator{};
      if (profile_ == nullptr || it == profile_->end()) {
        return core::FailedPrecondition("modeled compute: no profiled time for a GEMM of m " +
                                        std::to_string(m) + " n " + std::to_string(n) + " k " +
                                        std::to_string(k) + (trans_a ? " (A transposed)" : ""));
      }
      comm::SleepUntilNs(comm::NowNs() + static_cast<int64_t>(it->second * 1e9));
      return core::Status::Ok();
    }
  }
  return core::Internal("unknown compute mode");
}

std::vector<GemmShape> OverlapContext::TakeRecorded() {
  std::lock_guard<std::mutex> lock(record_mu_);
  std::vector<GemmShape> out;
  out.swap(recorded_);
  return out;
}

float* OverlapContext::Scratch(int slot, int64_t count) {
  CHECK(slot >= 0 && slot < 8);
  std::vector<float>& v = scratch_[slot];
  if (static_cast<int64_t>(v.size()) < count) v.resize(static_cast<size_t>(count));
  return v.data();
}

}  // namespace tessera::compass
