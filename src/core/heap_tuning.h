// UseSteadyHeap: makes glibc malloc keep freed memory for reuse instead of returning it to
// the kernel, so repeated training steps stop paying page faults for buffers they allocate
// and free every step (by default blocks >= 128 KiB are mmap'ed and unmapped on free until
// glibc's dynamic threshold adapts, which makes the first few steps much slower than the
// rest). Sets M_MMAP_THRESHOLD to 32 MiB (glibc's maximum) and M_TRIM_THRESHOLD to 1 GiB; the
// process's resident memory then tracks its peak, as with a caching GPU allocator. Affects the
// whole process; call once at start-up from the main thread. Returns false if glibc refused.
#pragma once

namespace tessera::core {

bool UseSteadyHeap();

}  // namespace tessera::core
