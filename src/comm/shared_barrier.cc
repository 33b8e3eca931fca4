#include "comm/shared_barrier.h"

#include <atomic>

#include "comm/futex.h"

namespace tessera::comm {

namespace {

struct BarrierWords {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> generation;
  std::atomic<int64_t> start_ns;
};

}  // namespace

StatusOr<std::unique_ptr<SharedBarrier>> SharedBarrier::Create(Communicator& comm) {
  ASSIGN_OR_RETURN(std::unique_ptr<SymmetricMemory> memory,
                   SymmetricMemory::Create(comm, sizeof(BarrierWords)));
  return std::unique_ptr<SharedBarrier>(new SharedBarrier(std::move(memory), comm.size()));
}

StatusOr<int64_t> SharedBarrier::Arrive(int64_t delay_ns, double timeout_s) {
  auto* w = reinterpret_cast<BarrierWords*>(memory_->segment(0));  // zeroed at creation
  const uint32_t next = ++generation_;
  if (w->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(size_)) {
    w->arrived.store(0, std::memory_order_relaxed);
    w->start_ns.store(NowNs() + delay_ns, std::memory_order_relaxed);
    Bump(&w->generation);  // release: the reset and the start are visible to the waiters
  } else {
    const int64_t deadline =
        timeout_s == kNoTimeout ? kNoDeadline : NowNs() + static_cast<int64_t>(timeout_s * 1e9);
    if (!WaitAtLeast(&w->generation, next, deadline)) {
      return core::DeadlineExceeded("barrier: not every rank arrived within " +
                                    std::to_string(timeout_s) + " s");
    }
  }
  return w->start_ns.load(std::memory_order_relaxed);
}

}  // namespace tessera::comm
