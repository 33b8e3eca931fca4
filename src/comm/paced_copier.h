// PacedCopier: memory copies (dst, src, bytes) executed in submission order and paced on one
// emulated resource (a link, a DMA engine), so that a copy takes the time it would take on the
// emulated machine (its bandwidth and latency scaled by the time scale, runtime/time_scale.h)
// instead of the time of a memcpy here. It is the one-resource case of the link emulator: a
// LinkFabric of this process (CreateLocal) with two endpoints (the copy's source side and its
// destination side) joined by one resource, and one CopyEngine (copy_engine.h) that sends
// every copy as a message of that stream.
//
// Timing (the fabric's reservation rule on one resource): a job submitted at t_sub (NowNs) of
// `bytes` starts on the resource when the resource is free and finishes `latency` after its
// bytes have passed:
//     start = max(t_sub, next_free),  next_free = start + bytes / bytes_per_s,
//     finish = next_free + latency_ns
// (the latency is per job and does not hold the resource, as an alpha-beta link: back-to-back
// jobs overlap their latencies). A job is cut into packets of kPacketBytes; a late wake-up of
// the engine thread delays a copy, never the timeline, so the jobs behind it keep their times.
// The engine delivers with no wake-up lead: a job is done no earlier than its finish time, and
// later by the wake-up overshoot (tens of microseconds here) plus the memcpy of its last
// packet (or of every packet when memcpy is slower than the pacing).
//
// Tickets: Submit returns a ticket (1, 2, ... in submission order); jobs complete in ticket
// order, so Done(t) implies Done(t') for every t' < t. Wait(t) blocks (a futex) until job t is
// done.
// Memory: `src` must stay unchanged and `dst` reserved until the job is done; regions of jobs
// in flight may overlap only if the caller accepts submission order (a later job's bytes win).
// Stats: jobs, bytes, busy seconds (the modeled seconds of each job alone, latency + bytes /
// bytes_per_s, summed) and the total lateness of packet copies past their arrival times.
// Errors: Create refuses a bandwidth that is not finite and positive or a latency outside
// [0, kMaxLatencyNs] (InvalidArgument). Lifetime: the destructor completes every submitted job
// (at its paced time), then stops the thread.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "comm/copy_engine.h"
#include "comm/link_fabric.h"
#include "core/status.h"

namespace tessera::comm {

class PacedCopier {
 public:
  using Ticket = uint64_t;
  static constexpr int64_t kMaxLatencyNs = PacedLinks::kMaxLatencyNs;  // 10 s
  // The packet: large, since one stream never shares its resource with another flow (fair
  // sharing is what small packets are for), so a job costs few wake-ups; small enough that
  // the memcpy of the last packet adds well under a millisecond.
  static constexpr int64_t kPacketBytes = int64_t{4} << 20;
  struct Stats {
    int64_t jobs = 0;
    int64_t bytes = 0;
    double busy_s = 0;    // sum over jobs of latency + bytes / bytes_per_s
    int64_t late_ns = 0;  // sum over packets of (copy time - arrival time), >= 0
  };

  static core::StatusOr<std::unique_ptr<PacedCopier>> Create(double bytes_per_s,
                                                             int64_t latency_ns = 0);
  ~PacedCopier();
  PacedCopier(const PacedCopier&) = delete;
  PacedCopier& operator=(const PacedCopier&) = delete;

  double bytes_per_s() const { return bytes_per_s_; }
  int64_t latency_ns() const { return latency_ns_; }
  // The modeled seconds of one job of `bytes` on an idle resource: latency + bytes / bandwidth.
  double JobSeconds(int64_t bytes) const;

  // Queues a copy of `bytes` (>= 0; CHECKed) from src to dst and returns at once.
  Ticket Submit(void* dst, const void* src, int64_t bytes);
  bool Done(Ticket ticket) const;
  void Wait(Ticket ticket);
  // Waits for every job submitted so far.
  void WaitAll();
  int64_t in_flight() const;  // submitted, not yet done
  Stats stats() const;

 private:
  PacedCopier(double bytes_per_s, int64_t latency_ns, std::unique_ptr<LinkFabric> fabric);

  const double bytes_per_s_;
  const int64_t latency_ns_;
  std::unique_ptr<LinkFabric> fabric_;  // outlives the engine (declared first)
  std::unique_ptr<CopyEngine> engine_;
  std::atomic<uint32_t> done_{0};  // jobs done (the engine bumps it per message, in order)
  mutable std::mutex mu_;          // orders Submit's tickets with the engine's queue
  Ticket submitted_ = 0;
  Stats stats_;
};

}  // namespace tessera::comm
