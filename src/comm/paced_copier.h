// PacedCopier: one thread that executes memory copies (dst, src, bytes) in submission order,
// each paced on one emulated resource (a link, a DMA engine), so that a copy takes the time it
// would take on the emulated machine (its bandwidth and latency scaled by the time scale,
// runtime/time_scale.h) instead of the time of a memcpy here.
//
// Timing: a job submitted at t_sub (NowNs) of `bytes` starts on the resource when the resource
// is free and finishes `latency` after its bytes have passed:
//     start = max(t_sub, next_free),  next_free = start + bytes / bytes_per_s,
//     finish = next_free + latency_ns
// (the latency is per job and does not hold the resource, as an alpha-beta link: back-to-back
// jobs overlap their latencies). The times are fixed at Submit, so a late wake-up of the copy
// thread delays one job's completion but not the jobs behind it. The thread copies the bytes
// (memcpy), then sleeps until `finish` (SleepUntilNs, timer slack 1 ns; no spinning) and marks
// the job done: a job is done no earlier than its finish time, and later by the wake-up
// overshoot (tens of microseconds here) or by the memcpy when that is slower than the pacing.
//
// Tickets: Submit returns a ticket (1, 2, ... in submission order); jobs complete in ticket
// order, so Done(t) implies Done(t') for every t' < t. Wait(t) blocks (condition variable) until
// job t is done.
// Memory: `src` must stay unchanged and `dst` reserved until the job is done; regions of jobs
// in flight may overlap only if the caller accepts submission order (a later job's bytes win).
// Stats: jobs, bytes, busy seconds (the modeled seconds of each job alone, latency + bytes /
// bytes_per_s, summed) and the total lateness of completions past their finish times.
// Errors: Create refuses a bandwidth that is not finite and positive or a latency outside
// [0, kMaxLatencyNs] (InvalidArgument); finish times are clamped a century ahead. Lifetime: the
// destructor completes every submitted job (at its paced time), then stops the thread.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "core/status.h"

namespace tessera::comm {

class PacedCopier {
 public:
  using Ticket = uint64_t;
  static constexpr int64_t kMaxLatencyNs = int64_t{1'000'000'000'000};  // 1000 s
  struct Stats {
    int64_t jobs = 0;
    int64_t bytes = 0;
    double busy_s = 0;    // sum over jobs of latency + bytes / bytes_per_s
    int64_t late_ns = 0;  // sum over jobs of (done time - finish time), >= 0
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
  struct Job {
    void* dst;
    const void* src;
    int64_t bytes;
    int64_t finish_ns;
  };
  PacedCopier(double bytes_per_s, int64_t latency_ns);
  void Loop();

  const double bytes_per_s_;
  const int64_t latency_ns_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // new job or stop
  std::condition_variable done_cv_;  // a job finished
  std::deque<Job> queue_;
  int64_t next_free_ns_ = 0;
  Ticket submitted_ = 0, done_ = 0;
  bool stop_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace tessera::comm
