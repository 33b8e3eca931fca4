// Futex waits on 32-bit counters that may live in memory shared between processes (an MPI-3
// shared window) or between threads: the sleeping half of the link emulator's signals.
//
// A signal is a monotonically increasing std::atomic<uint32_t> counter. WaitAtLeast blocks
// (FUTEX_WAIT, no spinning) until the counter reaches `target`, comparing with wrap-around
// (a counter at most 2^31 increments past `target` counts as reached). Bump adds `delta`
// with release ordering and wakes every waiter; waiters read with acquire ordering, so what
// the bumping thread wrote before Bump is visible after the wait returns.
// Futexes are the shared (non-private) kind, so they work across processes that map the
// same memory as well as between threads.
//
// Timing: deadlines are CLOCK_MONOTONIC nanoseconds (NowNs()); kNoDeadline waits forever.
// SleepUntilNs sleeps (clock_nanosleep, TIMER_ABSTIME) without spinning.
// Thread-safety: all functions may be called concurrently on the same counter.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

namespace tessera::comm {

inline constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

// CLOCK_MONOTONIC in nanoseconds (common to every process of the machine).
int64_t NowNs();
// Sleeps until NowNs() >= deadline_ns (returns at once if it already is).
void SleepUntilNs(int64_t deadline_ns);
// Sets this thread's timer slack to 1 ns so that timed sleeps and waits wake as close to
// their deadline as the kernel allows (the default slack is 50 us).
void UseFineTimerSlack();

// Whether `value` has reached `target` (wrap-around aware).
inline bool CounterReached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

// Blocks until *counter has reached `target` or the deadline passes. Returns true if the
// counter reached the target.
bool WaitAtLeast(std::atomic<uint32_t>* counter, uint32_t target, int64_t deadline_ns);
// Adds `delta` and wakes every thread waiting on the counter.
void Bump(std::atomic<uint32_t>* counter, uint32_t delta = 1);

}  // namespace tessera::comm
