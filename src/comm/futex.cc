#include "comm/futex.h"

#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace tessera::comm {

namespace {

constexpr int64_t kNsPerS = 1'000'000'000;

timespec ToTimespec(int64_t ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / kNsPerS);
  ts.tv_nsec = static_cast<long>(ns % kNsPerS);
  return ts;
}

// The futex syscall needs the address of the counter's 32-bit word.
uint32_t* Word(std::atomic<uint32_t>* counter) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  static_assert(std::atomic<uint32_t>::is_always_lock_free);
  return reinterpret_cast<uint32_t*>(counter);
}

}  // namespace

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kNsPerS + ts.tv_nsec;
}

void SleepUntilNs(int64_t deadline_ns) {
  const timespec ts = ToTimespec(deadline_ns);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

void UseFineTimerSlack() { prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); }

bool WaitAtLeast(std::atomic<uint32_t>* counter, uint32_t target, int64_t deadline_ns) {
  for (;;) {
    const uint32_t seen = counter->load(std::memory_order_acquire);
    if (CounterReached(seen, target)) return true;
    timespec ts{};
    const timespec* timeout = nullptr;
    if (deadline_ns != kNoDeadline) {
      const int64_t left = deadline_ns - NowNs();
      if (left <= 0) return false;
      ts = ToTimespec(left);  // FUTEX_WAIT takes a relative timeout
      timeout = &ts;
    }
    // Sleeps only while the word still equals `seen` (no lost wake-up).
    syscall(SYS_futex, Word(counter), FUTEX_WAIT, seen, timeout, nullptr, 0);
  }
}

void Bump(std::atomic<uint32_t>* counter, uint32_t delta) {
  counter->fetch_add(delta, std::memory_order_release);
  syscall(SYS_futex, Word(counter), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace tessera::comm
