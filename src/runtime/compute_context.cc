#include "runtime/compute_context.h"

#include <algorithm>
#include <cmath>

#include "comm/futex.h"
#include "core/rng.h"
#include "core/stats.h"
#include "kernels/gemm.h"

namespace tessera::runtime {

namespace {

core::Status RealGemm(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                      const float* b, int64_t ldb, bool accumulate, float* c, int64_t ldc) {
  return kernels::Gemm(trans_a ? kernels::Transpose::kYes : kernels::Transpose::kNo,
                       kernels::Transpose::kNo, m, n, k, 1.0f, a, lda, b, ldb,
                       accumulate ? 1.0f : 0.0f, c, ldc);
}

}  // namespace

const char* ComputeModeName(ComputeMode m) {
  switch (m) {
    case ComputeMode::kReal:
      return "real";
    case ComputeMode::kModeled:
      return "modeled";
    case ComputeMode::kRecord:
      return "record";
    case ComputeMode::kSleepToSpeed:
      return "sleep-to-speed";
  }
  return "?";
}

core::StatusOr<ComputeMode> ParseComputeMode(const std::string& name) {
  for (ComputeMode m : {ComputeMode::kReal, ComputeMode::kModeled, ComputeMode::kRecord,
                        ComputeMode::kSleepToSpeed}) {
    if (name == ComputeModeName(m)) return m;
  }
  return core::InvalidArgument("compute: got '" + name +
                               "', must be real, modeled, record or sleep-to-speed");
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
    const int64_t lda = s.trans_a ? s.m : s.k;
    std::vector<double> times;
    for (int r = 0; r <= std::max(1, repeats); ++r) {
      const int64_t t0 = comm::NowNs();
      RETURN_IF_ERROR(
          RealGemm(s.trans_a, s.m, s.n, s.k, a.data(), lda, b.data(), s.n, false, c.data(), s.n));
      if (r > 0) times.push_back(static_cast<double>(comm::NowNs() - t0) * 1e-9);
    }
    out[s] = core::Median(times);
  }
  return out;
}

core::Status ComputeContext::set_speed(double speed) {
  if (!(speed > 0 && speed <= 1)) {
    return core::InvalidArgument("speed: got " + std::to_string(speed) +
                                 ", must be in (0, 1] (a fraction of the nominal rate)");
  }
  speed_ = speed;
  return core::Status::Ok();
}

core::Status ComputeContext::Gemm(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a,
                                  int64_t lda, const float* b, int64_t ldb, bool accumulate,
                                  float* c, int64_t ldc) {
  switch (mode_) {
    case ComputeMode::kReal:
      return RealGemm(trans_a, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
    case ComputeMode::kRecord: {
      std::lock_guard<std::mutex> lock(record_mu_);
      recorded_.push_back(GemmShape{trans_a, m, n, k});
      return core::Status::Ok();
    }
    case ComputeMode::kModeled: {
      const auto it =
          profile_ ? profile_->find(GemmShape{trans_a, m, n, k}) : GemmProfile::const_iterator{};
      if (profile_ == nullptr || it == profile_->end()) {
        return core::FailedPrecondition("modeled compute: no profiled time for a GEMM of m " +
                                        std::to_string(m) + " n " + std::to_string(n) + " k " +
                                        std::to_string(k) + (trans_a ? " (A transposed)" : ""));
      }
      comm::SleepUntilNs(comm::NowNs() + static_cast<int64_t>(it->second * 1e9));
      return core::Status::Ok();
    }
    case ComputeMode::kSleepToSpeed: {
      const int64_t t0 = comm::NowNs();
      RETURN_IF_ERROR(RealGemm(trans_a, m, n, k, a, lda, b, ldb, accumulate, c, ldc));
      if (speed_ < 1) {
        const double elapsed_ns = static_cast<double>(comm::NowNs() - t0);
        comm::SleepUntilNs(t0 + static_cast<int64_t>(std::llround(elapsed_ns / speed_)));
      }
      return core::Status::Ok();
    }
  }
  return core::Internal("unknown compute mode");
}

std::vector<GemmShape> ComputeContext::TakeRecorded() {
  std::lock_guard<std::mutex> lock(record_mu_);
  std::vector<GemmShape> out;
  out.swap(recorded_);
  return out;
}

}  // namespace tessera::runtime
