// SharedBarrier: a barrier for ranks on one machine that sleeps on a futex instead of
// polling (MPI barriers poll, and an oversubscribed machine then steals the core a timed
// transfer needs). Optionally agrees on a common start instant: the last rank to arrive sets
// start = now + delay and every rank returns it, so measurements can begin together
// (SleepUntilNs(start)).
//
// Collective rules: Create is collective over the communicator (ranks on one machine, or the
// in-process backend's threads); Arrive is called by every rank the same number of times.
// Thread-safety: one thread per rank.
#pragma once

#include <cstdint>
#include <memory>

#include "comm/communicator.h"
#include "comm/symmetric_memory.h"

namespace tessera::comm {

class SharedBarrier {
 public:
  static StatusOr<std::unique_ptr<SharedBarrier>> Create(Communicator& comm);
  // Waits until every rank arrived; returns the agreed start (arrival of the last + delay_ns).
  // DeadlineExceeded after timeout_s seconds (kNoTimeout: forever).
  StatusOr<int64_t> Arrive(int64_t delay_ns = 0, double timeout_s = kNoTimeout);

 private:
  explicit SharedBarrier(std::unique_ptr<SymmetricMemory> memory, int size)
      : memory_(std::move(memory)), size_(size) {}
  std::unique_ptr<SymmetricMemory> memory_;
  int size_;
  uint32_t generation_ = 0;
};

}  // namespace tessera::comm
