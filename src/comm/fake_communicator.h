// In-process fake Communicator backend: n ranks are n threads of one process sharing a
// FakeWorld (a mailbox for point-to-point messages and a rendezvous for collectives and
// sub-communicator creation). It implements the Communicator contract of communicator.h with
// the same semantics as the MPI backend, so code written against Communicator can be unit
// tested without MPI. It is deliberately strict:
//  - sends are synchronous: a send completes only once a matching receive has taken the
//    data, so code that would deadlock on MPI with large messages also deadlocks here;
//  - collectives check that all ranks called the same collective with the same dtype and
//    matching sizes and otherwise return InvalidArgument on every rank;
//  - a rank whose thread has finished (RunFakeRanks marks it exited) makes operations that
//    wait for it return Unavailable instead of hanging; with an op timeout set, waits return
//    DeadlineExceeded after that long.
// Collectives move data with plain memcpy between the threads' buffers; sums are taken in
// rank order (bf16 in fp32, rounded once), so every rank gets identical bits.
//
// Thread-safety: FakeWorld is thread-safe; each Communicator it hands out is used by the
// thread of its rank only.
#pragma once

#include <functional>
#include <memory>

#include "comm/communicator.h"

namespace tessera::comm {

namespace internal {
class FakeHub;
}  // namespace internal

class FakeWorld {
 public:
  explicit FakeWorld(int size);
  int size() const { return size_; }
  // The world communicator of `rank` (0 <= rank < size); call once per rank. It may outlive
  // this FakeWorld object (the shared state is reference-counted).
  std::unique_ptr<Communicator> Rank(int rank);
  // Marks `rank` as gone: operations of other ranks that wait for it return Unavailable.
  void MarkExited(int rank);

 private:
  int size_;
  std::shared_ptr<internal::FakeHub> hub_;
};

// Runs fn(world communicator of rank r) on n threads, r = 0..n-1, and joins them. A rank is
// marked exited as soon as its fn returns.
void RunFakeRanks(int n, const std::function<void(Communicator&)>& fn);

}  // namespace tessera::comm
