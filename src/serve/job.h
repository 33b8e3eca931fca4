// Job: one request of a server on its way through the serving core: queued (BoundedQueue),
// admitted (Admission), run by the worker threads of JobRunner, answered. A system derives
// its own job type (the request it parsed, its result) from it.
//
// Times are seconds of a steady clock; a job's deadline (deadline_s > 0) bounds how long it
// may wait in the queue: StartBatch answers a job still waiting after that long with
// DeadlineExceeded (HTTP 503) instead of running it.
// Thread-safety: a job is written by the handler thread until it is queued, then by the
// runner and its workers (under the runner's lock or by the one worker running it), and read
// by the handler again once `done` is set.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"

namespace tessera::serve {

using Clock = std::chrono::steady_clock;

struct Job {
  virtual ~Job() = default;

  Clock::time_point arrival = Clock::now();
  double deadline_s = 0;  // > 0: the longest wait in the queue; 0: none
  // Set by the runner before `done`: the outcome (OK when the job ran), how long it waited
  // (arrival to the start of its run) and the device it ran on (the first of a gang).
  core::Status status;
  double queue_s = 0;
  int device = -1;
  // Jobs run in this one's pass (batching, Admission::TakeBatch), answered with it.
  std::vector<std::shared_ptr<Job>> mates;
  std::promise<void> done;
};

// Starts a pass of `batch` (a head and its batch mates) on `device`: sets each job's device
// and queue_s, and the status of each job whose deadline passed while queued to
// DeadlineExceeded. True when any job is still within its deadline (the pass should run).
bool StartBatch(std::span<Job* const> batch, int device);

}  // namespace tessera::serve
