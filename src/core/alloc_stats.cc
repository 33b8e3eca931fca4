#include "core/alloc_stats.h"

#include <atomic>

namespace tessera::core {
namespace {
std::atomic<bool> g_installed{false};
std::atomic<int64_t> g_allocated{0};
std::atomic<int64_t> g_peak{0};
}  // namespace

bool AllocStatsEnabled() { return g_installed.load(std::memory_order_relaxed); }
int64_t AllocatedBytes() { return g_allocated.load(std::memory_order_relaxed); }
int64_t PeakAllocatedBytes() { return g_peak.load(std::memory_order_relaxed); }
void ResetPeakAllocatedBytes() {
  g_peak.store(g_allocated.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

namespace internal {
void MarkAllocHooksInstalled() { g_installed.store(true, std::memory_order_relaxed); }
void CountAlloc(int64_t bytes) {
  const int64_t now = g_allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
void CountFree(int64_t bytes) { g_allocated.fetch_sub(bytes, std::memory_order_relaxed); }
}  // namespace internal

}  // namespace tessera::core
