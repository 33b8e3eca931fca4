// Internal to the in-process backend (in_process_communicator.cc): the shared state of one
// InProcessWorld. InProcessHub holds every rank's posted point-to-point operations, the collective
// slots that ranks rendezvous in (one per communicator context and sequence number), and the
// sub-communicator rendezvous. All fields are guarded by InProcessHub::mu; ranks wait on its
// condition variable. Not part of the public API: include only from in_process_communicator.cc.
#pragma once

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/dtype.h"
#include "comm/request.h"
#include "core/status.h"

namespace tessera::comm {
namespace internal {

// One posted send or receive. Fields are guarded by InProcessHub::mu.
struct P2pOp {
  bool is_send = false;
  uint64_t context = 0;
  int src = 0;  // communicator ranks
  int dst = 0;
  int tag = 0;
  int peer_world = 0;  // world rank of the other side
  const float* send_data = nullptr;
  float* recv_data = nullptr;
  int64_t count = 0;  // send: message length; recv: buffer capacity
  bool done = false;
  Status status;
};

enum class CollKind {
  kAllToAllV,
  kAllGatherV,
  kAllGather,
  kAllReduceSum,
  kReduceScatterV,
  kBroadcast,
  kBarrier
};

const char* CollName(CollKind kind) {
  switch (kind) {
    case CollKind::kAllToAllV:
      return "AllToAllV";
    case CollKind::kAllGatherV:
      return "AllGatherV";
    case CollKind::kAllGather:
      return "AllGather";
    case CollKind::kAllReduceSum:
      return "AllReduceSum";
    case CollKind::kReduceScatterV:
      return "ReduceScatterV";
    case CollKind::kBroadcast:
      return "Broadcast";
    case CollKind::kBarrier:
      return "Barrier";
  }
  return "?";
}

// What one rank passed to a collective; the pointers stay valid while the rank is inside it.
struct CollArgs {
  CollKind kind = CollKind::kBarrier;
  DType dtype = DType::kF32;
  const void* send = nullptr;
  int64_t send_elems = 0;
  void* recv = nullptr;
  int64_t recv_elems = 0;
  std::span<const int64_t> send_counts, send_displs, recv_counts, recv_displs;
  int root = 0;
};

struct CollSlot {
  explicit CollSlot(int n) : args(n), present(n, false) {}
  std::vector<CollArgs> args;
  std::vector<bool> present;
  int arrived = 0;
  int finished = 0;
  int departed = 0;
  Status abandoned;  // set when a member gave up before everybody arrived
};

struct SubRendezvous {
  uint64_t context = 0;
  std::vector<bool> present;
  int arrived = 0;
  Status abandoned;
};

class InProcessHub {
 public:
  explicit InProcessHub(int n) : exited(n, false) {}

  // Waits on cv until pred() holds or timeout_s passes; false on timeout.
  template <typename Pred>
  bool WaitFor(std::unique_lock<std::mutex>& lock, double timeout_s, Pred pred) {
    if (std::isinf(timeout_s)) {
      cv.wait(lock, pred);
      return true;
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_s));
    return cv.wait_until(lock, deadline, pred);
  }

  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> exited;  // by world rank
  std::deque<std::shared_ptr<P2pOp>> sends;
  std::deque<std::shared_ptr<P2pOp>> recvs;
  std::map<std::pair<uint64_t, uint64_t>, CollSlot> slots;  // (context, sequence)
  std::map<std::pair<uint64_t, std::vector<int>>, SubRendezvous> subs;
  uint64_t next_context = 1;  // 0 is the world
};

}  // namespace internal

}  // namespace tessera::comm
