// JobRunner: the queue, admission and worker threads of a server. Handlers Submit jobs into
// one bounded FIFO queue; the Admission (admission.h) admits the queue's head in strict FCFS
// order onto devices (with its batch mates, TakeBatch); each device has slots_per_device
// worker threads that run the members admitted to it through the system's Executor, one at a
// time per thread. When every member of a job has returned, the admission's reservation is
// released, the next heads are admitted, and the job and its batch mates are answered (their
// `done` set).
//
// Executor(job, placement, device, member): runs member `member` (0 .. span - 1) of `job` on
// `device` (= placement.device + member) on a worker thread, without the runner's lock. It
// writes the outcome of the job and its mates into their `status` (member 0 answers); the
// Status it returns is a member's own failure: the first one returned by any member becomes
// the status of the job and of its mates that are still OK.
// Stopping (Drain): new jobs are refused (kStopping); the workers run every job already queued
// or admitted, then exit and are joined. Idempotent.
// Errors: Submit returns kFull when the queue holds queue_capacity jobs, kStopping after Drain.
// Thread-safety: every public method may be called from any thread except Drain, which must
// not be called from an Executor.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "serve/admission.h"
#include "serve/bounded_queue.h"
#include "serve/job.h"

namespace tessera::serve {

struct RunnerOptions {
  int devices = 1;
  int slots_per_device = 1;  // worker threads per device
  int queue_capacity = 16;   // jobs waiting for admission
};

class JobRunner {
 public:
  using Executor =
      std::function<core::Status(Job& job, const Placement& placement, int device, int member)>;
  // Called first on each worker thread (e.g. to pin it to a core); may be empty.
  using WorkerSetup = std::function<void(int device)>;

  JobRunner(const RunnerOptions& options, std::unique_ptr<Admission> admission, Executor executor,
            WorkerSetup setup = {});
  ~JobRunner();  // Drain()
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // Starts the worker threads (once).
  void Start();

  enum class SubmitResult { kQueued, kFull, kStopping };
  // Queues `job` (and admits what can start); the job is answered through its `done`.
  SubmitResult Submit(std::shared_ptr<Job> job);

  void Drain();

  bool accepting() const;
  int64_t queue_length() const;
  int64_t in_flight() const;    // admitted jobs and their batch mates not yet answered
  int64_t batch_mates() const;  // jobs run in another job's pass so far
  const RunnerOptions& options() const { return options_; }

 private:
  struct Admitted {
    std::shared_ptr<Job> job;
    Placement placement;
    int members_left = 1;
    core::Status member_status;  // the first member's failure
  };
  void AdmitLocked();  // mu_ held
  void Work(int device);

  const RunnerOptions options_;
  std::unique_ptr<Admission> admission_;  // guarded by mu_
  Executor executor_;
  WorkerSetup setup_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  BoundedQueue<std::shared_ptr<Job>> queue_;
  // Per device, the admitted members (a gang's job is in the ready queue of each device).
  std::vector<std::deque<std::pair<std::shared_ptr<Admitted>, int>>> ready_;
  int64_t in_flight_ = 0;
  int64_t batch_mates_ = 0;
  bool accepting_ = true;
  bool exit_ = false;
  std::vector<std::thread> workers_;
  std::mutex drain_mu_;  // serialises Drain()
  bool drained_ = false;
};

}  // namespace tessera::serve
