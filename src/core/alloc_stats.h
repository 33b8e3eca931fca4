// Process-wide heap accounting: bytes currently allocated through C++ operator new and the
// peak since the last reset, the CPU analogue of a GPU allocator's "max memory allocated".
//
// The counters are fed by replacements of the global operator new/delete, which live in a
// separate object library (tessera_alloc_hooks, alloc_hooks.cc) that only executables opt
// into (the tessera CLI and the alloc test); sanitizer builds leave the hooks out because the
// sanitizers replace operator new themselves. Without the hooks AllocStatsEnabled() is false
// and every counter reads 0.
// What is counted: every block from operator new / new[] (all std containers, make_unique,
// the engine's device tensors), at malloc_usable_size granularity. Not counted: direct
// malloc (MPI's internal buffers, oneDNN/OpenBLAS scratch) and memory mapped by libraries.
// Thread-safe (relaxed atomics); the peak is exact for a single allocating thread.
#pragma once

#include <cstdint>

namespace tessera::core {

// True when the operator new/delete hooks are linked into this executable.
bool AllocStatsEnabled();
// Bytes currently allocated through operator new.
int64_t AllocatedBytes();
// Largest AllocatedBytes() since the process started or the last ResetPeakAllocatedBytes().
int64_t PeakAllocatedBytes();
// Sets the peak to the current allocated bytes.
void ResetPeakAllocatedBytes();

namespace internal {
// Called by the hooks only.
void MarkAllocHooksInstalled();
void CountAlloc(int64_t bytes);
void CountFree(int64_t bytes);
}  // namespace internal

}  // namespace tessera::core
