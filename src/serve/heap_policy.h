// HeapOptions: how a long-running server's process uses glibc malloc, so that its resident
// memory returns to the same level whenever it is idle instead of keeping every burst's
// high-water (the serving core applies them when a server binds: HttpServer::Bind).
//
// Why (measured on `tessera kernelflume serve` under repeated abuse runs, docs/kernelflume.md):
// the bytes the program holds stay flat from run to run, but with glibc's defaults the RSS
// grew by 1-4 MiB per run: up to 8 x cores malloc arenas, each keeping the free top of its
// heap (glibc raises its trim threshold past a burst's size after a large block is freed, and
// malloc_trim does not shrink other arenas' tops), and each of the handler threads' tcaches
// (freed blocks a thread keeps for itself until it exits).
//
//   malloc_arenas         M_ARENA_MAX: the most malloc arenas (0: glibc's default, 8 x cores).
//                         Only arenas created after the call are bounded: apply it before the
//                         process starts many threads.
//   trim_threshold_bytes  M_TRIM_THRESHOLD: free memory at the top of a heap past this is
//                         returned to the kernel when a block next to it is freed (0: keep
//                         glibc's dynamic threshold)
//   mmap_threshold_bytes  M_MMAP_THRESHOLD: blocks this large or larger get their own mapping,
//                         unmapped when freed (0: glibc's dynamic threshold). Setting either
//                         threshold fixes both (glibc then stops adapting them).
//   release_when_idle     ReleaseFreeHeap when the handler pool goes idle (http_server.h)
//
// Units: bytes. Affects the whole process (a later call overrides an earlier one).
// Errors: ValidateHeapOptions and ApplyHeapOptions return InvalidArgument naming the first bad
// field. A setting the allocator refuses (a sanitizer's or another malloc than glibc's) is
// skipped and logged at info level, not an error: the policy shapes idle memory only.
// Thread-safety: ApplyHeapOptions and ReleaseFreeHeap may be called from any thread.
#pragma once

#include <cstdint>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::serve {

struct HeapOptions {
  int malloc_arenas = 2;
  int64_t trim_threshold_bytes = 128 * 1024;
  int64_t mmap_threshold_bytes = 128 * 1024;
  bool release_when_idle = true;
};

core::Status ValidateHeapOptions(const HeapOptions& options);
core::Status ApplyHeapOptions(const HeapOptions& options);

// Returns the free memory of every arena that whole pages of it allow to the kernel
// (malloc_trim(0)); a few milliseconds. Returns whether any memory was released.
bool ReleaseFreeHeap();

// The allocator's view of the heap (mallinfo2, summed over every arena), in bytes:
// {"arena_bytes": obtained from the kernel for the arenas, "in_use_bytes": in use (freed
// blocks a thread's tcache keeps count as in use), "free_bytes": free in the arenas,
// "mmapped_bytes": blocks in their own mappings}.
core::Json HeapStats();

}  // namespace tessera::serve
