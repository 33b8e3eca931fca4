// PlayTrace: runs the allocations and frees of a trace (no compute) through a
// runtime::DeviceAllocator, op by op as the pipeline would: the weights first, outside ops; then
// each flat op opened with its section and step, the instances allocated there (in ExpandedTrace
// order) and those freed there; the weights freed after the last op. With check_contents, every
// instance is filled with a pattern of its own at allocation and checked when it is freed, so a
// layout that places two live instances on the same bytes is caught in real memory, not only on
// paper (VerifyLayout). Used to test the allocators and the recorder against random traces,
// and to replay any trace (analytic ones included) under an allocator.
//
// Returns the allocator's first error (out of memory, a diverged replay) or DataLoss-like
// FailedPrecondition "instance k '<name>' was overwritten while live" from the check.
// Thread-safety: reentrant; the allocator is used by the calling thread only.
#pragma once

#include "core/status.h"
#include "runtime/device_allocator.h"
#include "xema/memory_trace.h"

namespace tessera::xema {

struct PlayOptions {
  bool check_contents = true;
  // Bytes filled and checked at each end of an instance (all of it when smaller).
  int64_t check_bytes = 4096;
};

core::Status PlayTrace(const MemoryTrace& trace, const ExpandedTrace& x,
                       runtime::DeviceAllocator& allocator, const PlayOptions& options = {});

}  // namespace tessera::xema
