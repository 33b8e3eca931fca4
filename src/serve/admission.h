// Admission: the rule that decides whether the job at the head of a server's queue may start
// now and where (its devices), and which waiting jobs join its run (batching). JobRunner
// offers it the head in strict FCFS order, under its lock, and stops at the first refusal
// (the head waits, and everything behind it); Release gives back what Admit reserved once
// every member of the job has finished. A system plugs in its own rule (Xema's serving plan:
// xema/serve/plan_admission.h); OneJobPerDevice is the plain one.
//
// Placement: devices device .. device + span - 1; a job of span > 1 runs as a gang, one
// member per device, all at once (each device's worker runs its member).
// Errors: none (a refusal is nullopt). Thread-safety: not thread-safe; JobRunner calls it under
// its lock only.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "serve/bounded_queue.h"
#include "serve/job.h"

namespace tessera::serve {

struct Placement {
  int device = -1;  // the first device held
  int span = 1;     // devices held: device .. device + span - 1
};

class Admission {
 public:
  virtual ~Admission() = default;
  // Admits (and reserves devices for) `head`, or nullopt to keep it waiting.
  virtual std::optional<Placement> Admit(Job& head) = 0;
  // Gives back what Admit reserved for `job` at `placement`.
  virtual void Release(Job& job, const Placement& placement) = 0;
  // Batching hook, called right after `head` was admitted: takes the waiting jobs that run in
  // the head's pass out of `queue` (in queue order). The default batches nothing.
  virtual std::vector<std::shared_ptr<Job>> TakeBatch(Job& head,
                                                      BoundedQueue<std::shared_ptr<Job>>& queue);
};

// Each device runs one job at a time: the head starts on the idle device of lowest index.
class OneJobPerDevice final : public Admission {
 public:
  explicit OneJobPerDevice(int devices);
  std::optional<Placement> Admit(Job& head) override;
  void Release(Job& job, const Placement& placement) override;

 private:
  std::vector<bool> busy_;
};

}  // namespace tessera::serve
