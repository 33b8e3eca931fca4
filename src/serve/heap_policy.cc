#include "serve/heap_policy.h"

#include <fmt/format.h>
#include <malloc.h>

#include "core/log.h"

namespace tessera::serve {

namespace {

// The largest threshold glibc accepts for M_MMAP_THRESHOLD (HEAP_MAX_SIZE / 2 on 64-bit).
constexpr int64_t kMaxThresholdBytes = int64_t{32} << 20;

}  // namespace

core::Status ValidateHeapOptions(const HeapOptions& o) {
  auto bad = [](const char* name, auto value, const char* allowed) {
    return core::InvalidArgument(fmt::format("heap: {} = {}, must be {}", name, value, allowed));
  };
  if (o.malloc_arenas < 0 || o.malloc_arenas > 1024) {
    return bad("malloc_arenas", o.malloc_arenas, "in [0, 1024] (0: glibc's default)");
  }
  if (o.trim_threshold_bytes < 0 || o.trim_threshold_bytes > kMaxThresholdBytes) {
    return bad("trim_threshold_bytes", o.trim_threshold_bytes, "in [0, 32 MiB] (0: dynamic)");
  }
  if (o.mmap_threshold_bytes < 0 || o.mmap_threshold_bytes > kMaxThresholdBytes) {
    return bad("mmap_threshold_bytes", o.mmap_threshold_bytes, "in [0, 32 MiB] (0: dynamic)");
  }
  return core::Status::Ok();
}

core::Status ApplyHeapOptions(const HeapOptions& o) {
  RETURN_IF_ERROR(ValidateHeapOptions(o));
  // A malloc that is not glibc's (a sanitizer's, jemalloc) refuses mallopt: the policy only
  // shapes idle memory, so the server runs without it (said at info level).
  auto set = [](int param, int64_t value, const char* name) -> core::Status {
    if (mallopt(param, static_cast<int>(value)) != 1) {
      TLOG(kInfo, "heap: malloc refused {} = {} (mallopt; not glibc's allocator?): not applied",
           name, value);
    }
    return core::Status::Ok();
  };
  if (o.malloc_arenas > 0) RETURN_IF_ERROR(set(M_ARENA_MAX, o.malloc_arenas, "malloc_arenas"));
  if (o.trim_threshold_bytes > 0) {
    RETURN_IF_ERROR(set(M_TRIM_THRESHOLD, o.trim_threshold_bytes, "trim_threshold_bytes"));
  }
  if (o.mmap_threshold_bytes > 0) {
    RETURN_IF_ERROR(set(M_MMAP_THRESHOLD, o.mmap_threshold_bytes, "mmap_threshold_bytes"));
  }
  return core::Status::Ok();
}

bool ReleaseFreeHeap() { return malloc_trim(0) == 1; }

core::Json HeapStats() {
  const struct mallinfo2 m = mallinfo2();
  return {{"arena_bytes", m.arena},
          {"in_use_bytes", m.uordblks},
          {"free_bytes", m.fordblks},
          {"mmapped_bytes", m.hblkhd}};
}

}  // namespace tessera::serve
