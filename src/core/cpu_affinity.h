// CPU affinity of the calling thread: a serving device is one core, so every thread that runs
// its requests is pinned to that core and they share it as requests share a GPU's SMs
// (processor sharing), instead of spreading over the host's other cores.
// Errors: InvalidArgument for a core outside [0, OnlineCpus()); Internal when the kernel
// refuses (e.g. the core is outside the process's cpuset). Thread-safety: per thread.
#pragma once

#include "core/status.h"

namespace tessera::core {

// Cores the process may run on (sched_getaffinity), at least 1.
int OnlineCpus();
// The index-th core the process may run on (index in [0, OnlineCpus())), -1 when out of range.
int AllowedCpu(int index);
// Pins the calling thread to `cpu` (an id from AllowedCpu).
Status PinThisThreadToCpu(int cpu);

}  // namespace tessera::core
