// The in-process Communicator backend: n ranks are n threads of one process sharing an
// InProcessWorld (a mailbox for point-to-point messages and a rendezvous for collectives and
// sub-communicator creation); data moves between the ranks' buffers with real memcpy. It is
// the production backend of the servers' sequence-parallel gangs (xema/serve: one gang's
// members are device threads of the server) and the backend of the unit tests of code written
// against Communicator. It implements the Communicator contract of communicator.h with the
// same semantics as the MPI backend, and it is deliberately strict:
//  - sends are synchronous: a send completes only once a matching receive has taken the
//    data, so code that would deadlock on MPI with large messages also deadlocks here;
//  - collectives check that all ranks called the same collective with the same dtype and
//    matching sizes and otherwise return InvalidArgument on every rank;
//  - a rank whose thread has finished (RunInProcessRanks marks it exited; a server marks a
//    gang member with MarkExited) makes operations that wait for it return Unavailable
//    instead of hanging; with an op timeout set, waits return DeadlineExceeded after that long.
// Sums are taken in rank order (bf16 in fp32, rounded once), so every rank gets identical bits.
//
// Thread-safety: InProcessWorld is thread-safe; each Communicator it hands out is used by the
// thread of its rank only.
#pragma once

#include <functional>
#include <memory>

#include "comm/communicator.h"

namespace tessera::comm {

namespace internal {
class InProcessHub;
}  // namespace internal

class InProcessWorld {
 public:
  explicit InProcessWorld(int size);
  int size() const { return size_; }
  // The world communicator of `rank` (0 <= rank < size); call once per rank. It may outlive
  // this InProcessWorld object (the shared state is reference-counted).
  std::unique_ptr<Communicator> Rank(int rank);
  // Marks `rank` as gone: operations of other ranks that wait for it return Unavailable.
  void MarkExited(int rank);

 private:
  int size_;
  std::shared_ptr<internal::InProcessHub> hub_;
};

// Runs fn(world communicator of rank r) on n threads, r = 0..n-1, and joins them. A rank is
// marked exited as soon as its fn returns.
void RunInProcessRanks(int n, const std::function<void(Communicator&)>& fn);

}  // namespace tessera::comm
