// What this machine has free now: MemAvailable from /proc/meminfo (the kernel's estimate of
// memory that can be allocated without swapping), in bytes; 0 when it cannot be read.
// Used to bound inputs and jobs before they allocate (core/input_file.h, the engine's run
// memory check). And what a process holds: its resident set (VmRSS of /proc/PID/status, the
// pages of the process in RAM now), in bytes.
// Errors: ResidentBytes is NotFound when the process does not exist (or /proc is not
// mounted) and Internal when its status has no VmRSS line (a zombie). Reentrant.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace tessera::core {

int64_t AvailableMemoryBytes();

// pid 0: this process.
StatusOr<int64_t> ResidentBytes(int pid);

}  // namespace tessera::core
