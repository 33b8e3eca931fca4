// What this machine has free now: MemAvailable from /proc/meminfo (the kernel's estimate of
// memory that can be allocated without swapping), in bytes; 0 when it cannot be read.
// Used to bound inputs and jobs before they allocate (core/input_file.h, the engine's run
// memory check). Reentrant.
#pragma once

#include <cstdint>

namespace tessera::core {

int64_t AvailableMemoryBytes();

}  // namespace tessera::core
