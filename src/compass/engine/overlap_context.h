// OverlapContext: what an overlap strategy (overlap_strategy.h) uses on one rank: the
// communicator, the emulated-link collectives over the best single ring (ring1, direct) and
// the best double ring, the rank's compute context (runtime/compute_context.h: a GEMM that
// really computes, sleeps for its profiled time, or only records its shape), and reusable
// scratch buffers (so a timed run allocates nothing).
//
// Thread-safety: one context per rank. Gemm and Scratch may be called from the rank's
// compute thread while the rank's comm thread runs collectives (decomposition), provided
// the two use different scratch slots; the collectives of one LinkCollectives are called
// from one thread at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "comm/link_collectives.h"
#include "core/status.h"
#include "runtime/compute_context.h"

namespace tessera::compass {

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

  // How the strategies' GEMMs run (mode, profile).
  runtime::ComputeContext& compute() { return compute_; }

  // compute().Gemm: C (m, n) = op(A) B (+ C when accumulate), as runtime::ComputeContext.
  core::Status Gemm(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, bool accumulate, float* c, int64_t ldc) {
    return compute_.Gemm(trans_a, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
  }

  // A buffer of at least `count` floats, kept between calls (slot 0..7).
  float* Scratch(int slot, int64_t count);

 private:
  comm::Communicator& world_;
  comm::LinkCollectives* ring1_;
  comm::LinkCollectives* ring2_;
  runtime::ComputeContext compute_;
  std::vector<float> scratch_[8];
};

}  // namespace tessera::compass
