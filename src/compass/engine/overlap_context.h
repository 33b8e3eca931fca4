// OverlapContext: what an overlap strategy (overlap_strategy.h) uses on one rank: the
// communicator, the emulated-link collectives over the best single ring (ring1, direct) and
// the best double ring, a GEMM that really computes, sleeps for its profiled time, or only
// records its shape, and reusable scratch buffers (so a timed run allocates nothing).
//
// Compute modes:
//  - kReal: kernels::Gemm (the build's backend, the caller's BLAS thread count).
//  - kModeled: sleeps for the profiled time of the GEMM's shape (GemmProfile) and leaves C
//    unwritten: "emulated compute", for ranks that outnumber cores; results are not checked.
//  - kRecord: records the shape (for profiling) and skips the GEMM.
// A shape missing from the profile in kModeled mode is FailedPrecondition naming it.
//
// Thread-safety: one context per rank. Gemm and Scratch may be called from the rank's
// compute thread while the rank's comm thread runs collectives (decomposition), provided
// the two use different scratch slots; the collectives of one LinkCollectives are called
// from one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "comm/communicator.h"
#include "comm/link_collectives.h"
#include "core/status.h"
#include "kernels/gemm.h"

namespace tessera::compass {

enum class ComputeMode { kReal, kModeled, kRecord };
const char* ComputeModeName(ComputeMode m);  // "real", "modeled", "record"

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

class OverlapContext {
 public:
  OverlapContext(comm::Communicator& world, comm::LinkCollectives* ring1,
                 comm::LinkCollectives* ring2)
      : world_(world), ring1_(ring1), ring2_(ring2) {}

  comm::Communicator& world() const { return world_; }
  // The collectives on the best single ring (also the direct algorithm's order) and on the
  // best double ring.
  comm::LinkCollectives& ring1() const { return *ring1_; }
  comm::LinkCollectives& ring2() const { return *ring2_; }

  void set_mode(ComputeMode m) { mode_ = m; }
  ComputeMode mode() const { return mode_; }
  void set_profile(const GemmProfile* p) { profile_ = p; }

  // C (m, n) = op(A) B (+ C when accumulate); A row-major (m, k), or (k, m) when trans_a;
  // B (k, n); ld's as kernels::Gemm.
  core::Status Gemm(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, bool accumulate, float* c, int64_t ldc);

  // The shapes recorded in kRecord mode since the last TakeRecorded.
  std::vector<GemmShape> TakeRecorded();

  // A buffer of at least `count` floats, kept between calls (slot 0..7).
  float* Scratch(int slot, int64_t count);

 private:
  comm::Communicator& world_;
  comm::LinkCollectives* ring1_;
  comm::LinkCollectives* ring2_;
  ComputeMode mode_ = ComputeMode::kReal;
  const GemmProfile* profile_ = nullptr;
  std::mutex record_mu_;
  std::vector<GemmShape> recorded_;
  std::vector<float> scratch_[8];
};

}  // namespace tessera::compass
