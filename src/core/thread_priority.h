// CPU priority of one thread (Linux: nice values are per thread, set with setpriority on the
// thread's id): background work that must yield the cores to the threads beside it runs on a
// thread of its own at a higher nice value, so the scheduler runs the others first whenever
// they are runnable and gives the background thread what is left.
// Raising a thread's nice value needs no privilege, lowering it again does (RLIMIT_NICE or
// CAP_SYS_NICE), so a thread is never lowered and restored: RunAtLowerPriority starts a fresh
// thread for the work. A new thread inherits its creator's nice value (helper threads it
// starts, e.g. an OpenMP team, stay at the lower priority too).
// Errors: InvalidArgument for an increment outside [0, 39]; Internal when the kernel refuses.
// Thread-safety: per thread.
#pragma once

#include <functional>

#include "core/status.h"

namespace tessera::core {

// The calling thread's nice value (-20 .. 19).
StatusOr<int> ThisThreadNice();
// Raises the calling thread's nice value by `increment` (capped at 19).
Status LowerThisThreadPriority(int increment);
// Runs `work` on a new thread whose nice value is the caller's + increment, waits for it and
// returns its Status; increment 0 runs it on the calling thread. Should the kernel refuse the
// lower priority, `work` still runs, at the caller's priority.
Status RunAtLowerPriority(int increment, const std::function<Status()>& work);

}  // namespace tessera::core
