// ComputeContext: how one rank's compute runs, the one switch every system uses to execute a
// model for real or to stand in for a device this machine does not have:
//
//   kReal         kernels::Gemm computes (the build's backend, the caller's BLAS threads).
//   kModeled      sleeps for the profiled time of the GEMM's shape (GemmProfile, seconds on
//                 this machine) and leaves C unwritten: "emulated compute", for ranks that
//                 outnumber cores; results are not checked. A shape missing from the profile
//                 is FailedPrecondition naming it.
//   kRecord       records the shape (for profiling) and skips the GEMM.
//   kSleepToSpeed computes for real, then sleeps until the call has lasted elapsed / speed
//                 (speed in (0, 1]): a device running at a fraction of its nominal rate
//                 (lower clocks under DVFS, a straggler). At speed 1 it is kReal.
//
// Shapes: C (m, n) = op(A) B (+ C when accumulate); A row-major (m, k), or (k, m) when trans_a;
// B (k, n); leading dimensions as kernels::Gemm.
// Thread-safety: Gemm and TakeRecorded may be called from several threads at once (the
// recording is locked; a rank's compute and comm threads share one context); set_mode,
// set_profile and set_speed are called by the owner between runs. The profile is not owned and
// must outlive its use.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/status.h"

namespace tessera::runtime {

enum class ComputeMode { kReal, kModeled, kRecord, kSleepToSpeed };
// "real", "modeled", "record", "sleep-to-speed".
const char* ComputeModeName(ComputeMode m);
// The inverse of ComputeModeName; InvalidArgument naming the value and the allowed names.
core::StatusOr<ComputeMode> ParseComputeMode(const std::string& name);

struct GemmShape {
  bool trans_a = false;
  int64_t m = 0, n = 0, k = 0;
  auto key() const { return std::tuple(trans_a, m, n, k); }
  bool operator<(const GemmShape& o) const { return key() < o.key(); }
  bool operator==(const GemmShape& o) const { return key() == o.key(); }
};

// Measured seconds (wall seconds on this machine, one thread) per GEMM shape.
using GemmProfile = std::map<GemmShape, double>;

// Times every shape on this thread with kernels::Gemm: the median of `repeats` runs after one
// warm-up, on buffers of the shape's size filled with seeded values.
core::StatusOr<GemmProfile> ProfileGemms(const std::vector<GemmShape>& shapes, int repeats = 5);

class ComputeContext {
 public:
  void set_mode(ComputeMode m) { mode_ = m; }
  ComputeMode mode() const { return mode_; }
  void set_profile(const GemmProfile* p) { profile_ = p; }
  // kSleepToSpeed's fraction of nominal speed, in (0, 1] (else InvalidArgument).
  [[nodiscard]] core::Status set_speed(double speed);
  double speed() const { return speed_; }

  core::Status Gemm(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, bool accumulate, float* c, int64_t ldc);

  // The shapes recorded in kRecord mode since the last TakeRecorded.
  std::vector<GemmShape> TakeRecorded();

 private:
  ComputeMode mode_ = ComputeMode::kReal;
  const GemmProfile* profile_ = nullptr;
  double speed_ = 1.0;
  std::mutex record_mu_;
  std::vector<GemmShape> recorded_;
};

}  // namespace tessera::runtime
