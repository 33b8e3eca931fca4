#include "comm/in_process_communicator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

#include "comm/in_process_hub.h"

namespace tessera::comm {

namespace {

using internal::CollArgs;
using internal::CollKind;
using internal::CollSlot;
using internal::InProcessHub;
using internal::P2pOp;

// Completes a matched pair (called with the hub lock held).
void Match(P2pOp& send, P2pOp& recv) {
  if (send.count > recv.count) {
    recv.status = core::InvalidArgument(fmt::format(
        "IRecv from rank {} tag {}: message of {} elements does not fit the buffer of {} "
        "elements",
        recv.src, recv.tag, send.count, recv.count));
  } else if (send.count > 0) {
    std::memcpy(recv.recv_data, send.send_data, static_cast<size_t>(send.count) * sizeof(float));
  }
  send.done = true;
  recv.done = true;
}

class InProcessRequest final : public RequestImpl {
 public:
  InProcessRequest(std::shared_ptr<InProcessHub> hub, std::shared_ptr<P2pOp> op)
      : hub_(std::move(hub)), op_(std::move(op)) {}

  StatusOr<bool> Test() override {
    std::lock_guard<std::mutex> lock(hub_->mu);
    if (op_->done) {
      if (!op_->status.ok()) return op_->status;
      return true;
    }
    if (hub_->exited[op_->peer_world]) return PeerGone();
    return false;
  }

  Status Wait(double timeout_s) override {
    std::unique_lock<std::mutex> lock(hub_->mu);
    const bool ready =
        hub_->WaitFor(lock, timeout_s, [&] { return op_->done || hub_->exited[op_->peer_world]; });
    if (op_->done) return op_->status;
    if (!ready) {
      return core::DeadlineExceeded(
          fmt::format("{}: not complete after {} s", Describe(), timeout_s));
    }
    return PeerGone();
  }

  void Cancel() override {
    std::lock_guard<std::mutex> lock(hub_->mu);
    if (op_->done) return;
    auto& queue = op_->is_send ? hub_->sends : hub_->recvs;
    queue.erase(std::remove(queue.begin(), queue.end(), op_), queue.end());
    op_->done = true;
    op_->status = core::FailedPrecondition(Describe() + ": cancelled");
  }

 private:
  std::string Describe() const {
    return op_->is_send ? fmt::format("ISend to rank {} tag {}", op_->dst, op_->tag)
                        : fmt::format("IRecv from rank {} tag {}", op_->src, op_->tag);
  }
  Status PeerGone() const {
    return core::Unavailable(fmt::format("{}: rank {} (world rank {}) has exited", Describe(),
                                         op_->is_send ? op_->dst : op_->src, op_->peer_world));
  }

  std::shared_ptr<InProcessHub> hub_;
  std::shared_ptr<P2pOp> op_;
};

class InProcessCommunicator final : public Communicator {
 public:
  bool ranks_share_address_space() const override { return true; }
  InProcessCommunicator(std::shared_ptr<InProcessHub> hub, uint64_t context, int rank,
                        std::vector<int> world_ranks)
      : Communicator(rank, std::move(world_ranks)), hub_(std::move(hub)), context_(context) {}

  [[noreturn]] void Abort(const Status& status) override {
    std::cerr << fmt::format("tessera in-process communicator: world rank {} aborts: {}\n",
                             world_rank(), status.ToString());
    std::abort();
  }

 protected:
  Status DoAllToAllV(ConstBuffer send, std::span<const int64_t> send_counts,
                     std::span<const int64_t> send_displs, MutableBuffer recv,
                     std::span<const int64_t> recv_counts,
                     std::span<const int64_t> recv_displs) override {
    CollArgs mine = Args(CollKind::kAllToAllV, send, recv);
    mine.send_counts = send_counts;
    mine.send_displs = send_displs;
    mine.recv_counts = recv_counts;
    mine.recv_displs = recv_displs;
    const int64_t elem = DTypeSize(send.dtype);
    return Collective(mine, [&](const std::vector<CollArgs>& all) -> Status {
      for (int i = 0; i < size(); ++i) {
        for (int j = 0; j < size(); ++j) {
          if (all[j].recv_counts[i] != all[i].send_counts[j]) {
            return core::InvalidArgument(
                fmt::format("AllToAllV: rank {} sends {} elements to rank {}, which expects {}", i,
                            all[i].send_counts[j], j, all[j].recv_counts[i]));
          }
        }
      }
      for (int i = 0; i < size(); ++i) {
        Copy(all[i].send, all[i].send_displs[rank()], recv.data, recv_displs[i], recv_counts[i],
             elem);
      }
      return Status::Ok();
    });
  }

  Status DoAllGatherV(ConstBuffer send, MutableBuffer recv, std::span<const int64_t> recv_counts,
                      std::span<const int64_t> recv_displs) override {
    CollArgs mine = Args(CollKind::kAllGatherV, send, recv);
    mine.recv_counts = recv_counts;
    mine.recv_displs = recv_displs;
    const int64_t elem = DTypeSize(send.dtype);
    return Collective(mine, [&](const std::vector<CollArgs>& all) -> Status {
      for (int i = 0; i < size(); ++i) {
        for (int j = 0; j < size(); ++j) {
          if (all[i].recv_counts[j] != all[j].send_elems) {
            return core::InvalidArgument(
                fmt::format("AllGatherV: rank {} contributes {} elements, rank {} expects {}", j,
                            all[j].send_elems, i, all[i].recv_counts[j]));
          }
        }
      }
      for (int j = 0; j < size(); ++j) {
        Copy(all[j].send, 0, recv.data, recv_displs[j], all[j].send_elems, elem);
      }
      return Status::Ok();
    });
  }

  Status DoAllGather(ConstBuffer send, MutableBuffer recv) override {
    const int64_t elem = DTypeSize(send.dtype);
    return Collective(Args(CollKind::kAllGather, send, recv),
                      [&](const std::vector<CollArgs>& all) -> Status {
                        RETURN_IF_ERROR(SameSendSize("AllGather", all));
                        for (int j = 0; j < size(); ++j) {
                          Copy(all[j].send, 0, recv.data, j * send.count, send.count, elem);
                        }
                        return Status::Ok();
                      });
  }

  Status DoAllReduceSum(MutableBuffer data) override {
    switch (data.dtype) {
      case DType::kF32:
        return AllReduce<float, float>(data);
      case DType::kBF16:
        return AllReduce<Bf16, float>(data);
      case DType::kI64:
        return AllReduce<int64_t, uint64_t>(data);
      case DType::kF64:
        return AllReduce<double, double>(data);
    }
    return core::Internal("AllReduceSum: unknown dtype");
  }

  Status DoReduceScatterV(ConstBuffer send, MutableBuffer recv,
                          std::span<const int64_t> recv_counts) override {
    switch (send.dtype) {
      case DType::kF32:
        return ReduceScatter<float, float>(send, recv, recv_counts);
      case DType::kBF16:
        return ReduceScatter<Bf16, float>(send, recv, recv_counts);
      case DType::kI64:
        return ReduceScatter<int64_t, uint64_t>(send, recv, recv_counts);
      case DType::kF64:
        return ReduceScatter<double, double>(send, recv, recv_counts);
    }
    return core::Internal("ReduceScatterV: unknown dtype");
  }

  Status DoBroadcast(MutableBuffer data, int root) override {
    CollArgs mine = Args(CollKind::kBroadcast, ConstBuffer{data.data, data.count, data.dtype}, {});
    mine.root = root;
    return Collective(mine, [&](const std::vector<CollArgs>& all) -> Status {
      RETURN_IF_ERROR(SameSendSize("Broadcast", all));
      for (int i = 0; i < size(); ++i) {
        if (all[i].root != root) {
          return core::InvalidArgument(
              fmt::format("Broadcast: rank {} uses root {}, rank {} uses root {}", rank(), root, i,
                          all[i].root));
        }
      }
      if (rank() != root) Copy(all[root].send, 0, data.data, 0, data.count, DTypeSize(data.dtype));
      return Status::Ok();
    });
  }

  Status DoBarrier() override {
    return Collective(CollArgs{}, [](const std::vector<CollArgs>&) { return Status::Ok(); });
  }

  StatusOr<std::unique_ptr<RequestImpl>> DoISend(std::span<const float> data, int dst,
                                                 int tag) override {
    auto op = std::make_shared<P2pOp>();
    op->is_send = true;
    op->context = context_;
    op->src = rank();
    op->dst = dst;
    op->tag = tag;
    op->peer_world = world_ranks()[dst];
    op->send_data = data.data();
    op->count = static_cast<int64_t>(data.size());
    {
      std::lock_guard<std::mutex> lock(hub_->mu);
      auto it = std::find_if(hub_->recvs.begin(), hub_->recvs.end(), [&](const auto& r) {
        return r->context == context_ && r->dst == dst && r->src == rank() && r->tag == tag;
      });
      if (it != hub_->recvs.end()) {
        Match(*op, **it);
        hub_->recvs.erase(it);
        hub_->cv.notify_all();
      } else {
        hub_->sends.push_back(op);
      }
    }
    return std::unique_ptr<RequestImpl>(std::make_unique<InProcessRequest>(hub_, std::move(op)));
  }

  StatusOr<std::unique_ptr<RequestImpl>> DoIRecv(std::span<float> data, int src, int tag) override {
    auto op = std::make_shared<P2pOp>();
    op->context = context_;
    op->src = src;
    op->dst = rank();
    op->tag = tag;
    op->peer_world = world_ranks()[src];
    op->recv_data = data.data();
    op->count = static_cast<int64_t>(data.size());
    {
      std::lock_guard<std::mutex> lock(hub_->mu);
      auto it = std::find_if(hub_->sends.begin(), hub_->sends.end(), [&](const auto& s) {
        return s->context == context_ && s->dst == rank() && s->src == src && s->tag == tag;
      });
      if (it != hub_->sends.end()) {
        Match(**it, *op);
        hub_->sends.erase(it);
        hub_->cv.notify_all();
      } else {
        hub_->recvs.push_back(op);
      }
    }
    return std::unique_ptr<RequestImpl>(std::make_unique<InProcessRequest>(hub_, std::move(op)));
  }

  StatusOr<std::unique_ptr<Communicator>> DoSub(const std::vector<int>& ranks) override {
    const int n = static_cast<int>(ranks.size());
    const int my_index =
        static_cast<int>(std::find(ranks.begin(), ranks.end(), rank()) - ranks.begin());
    std::vector<int> world;
    for (int r : ranks) world.push_back(world_ranks()[r]);

    std::unique_lock<std::mutex> lock(hub_->mu);
    internal::SubRendezvous& rv = hub_->subs[{context_, ranks}];
    if (rv.context == 0) {
      rv.context = hub_->next_context++;
      rv.present.assign(n, false);
    }
    auto given_up = [&] {
      return core::Unavailable(fmt::format("Sub([{}]): another member gave up on it: {}",
                                           fmt::join(ranks, ", "), rv.abandoned.ToString()));
    };
    if (!rv.abandoned.ok()) return given_up();
    rv.present[my_index] = true;
    ++rv.arrived;
    hub_->cv.notify_all();
    int gone = -1;
    const bool ready = hub_->WaitFor(lock, op_timeout_s(), [&] {
      if (rv.arrived == n || !rv.abandoned.ok()) return true;
      for (int i = 0; i < n; ++i) {
        if (!rv.present[i] && hub_->exited[world[i]]) gone = i;
      }
      return gone >= 0;
    });
    if (rv.arrived != n) {
      Status s;
      if (!rv.abandoned.ok()) {
        s = given_up();
      } else if (!ready) {
        s = core::DeadlineExceeded(fmt::format("Sub([{}]): not all members arrived within {} s",
                                               fmt::join(ranks, ", "), op_timeout_s()));
      } else {
        s = core::Unavailable(fmt::format("Sub([{}]): member rank {} has exited",
                                          fmt::join(ranks, ", "), ranks[gone]));
      }
      if (rv.abandoned.ok()) rv.abandoned = s;
      rv.present[my_index] = false;
      --rv.arrived;
      hub_->cv.notify_all();
      return s;
    }
    return std::unique_ptr<Communicator>(
        std::make_unique<InProcessCommunicator>(hub_, rv.context, my_index, std::move(world)));
  }

 private:
  static CollArgs Args(CollKind kind, ConstBuffer send, MutableBuffer recv) {
    CollArgs a;
    a.kind = kind;
    a.dtype = send.dtype;
    a.send = send.data;
    a.send_elems = send.count;
    a.recv = recv.data;
    a.recv_elems = recv.count;
    return a;
  }

  // Copies `count` elements of `elem` bytes from src[src_at..] to dst[dst_at..].
  static void Copy(const void* src, int64_t src_at, void* dst, int64_t dst_at, int64_t count,
                   int64_t elem) {
    if (count <= 0) return;
    std::memcpy(static_cast<char*>(dst) + dst_at * elem,
                static_cast<const char*>(src) + src_at * elem, static_cast<size_t>(count * elem));
  }

  // Element conversions for sums: T is the element type, A the accumulator (fp32 for bf16;
  // uint64_t for int64, so that the sum wraps instead of overflowing signed arithmetic).
  template <typename A, typename T>
  static A Widen(T v) {
    if constexpr (std::is_same_v<T, Bf16>) {
      return Bf16ToFloat(v);
    } else {
      return static_cast<A>(v);
    }
  }
  template <typename T, typename A>
  static T Narrow(A v) {
    if constexpr (std::is_same_v<T, Bf16>) {
      return FloatToBf16(v);
    } else {
      return static_cast<T>(v);
    }
  }

  // Sums elements [from, from + count) of every rank's send buffer, in rank order, into out.
  template <typename T, typename A>
  void SumBlock(const std::vector<CollArgs>& all, int64_t from, int64_t count, T* out) const {
    std::vector<A> acc(static_cast<size_t>(count), A(0));
    for (int i = 0; i < size(); ++i) {
      const T* src = static_cast<const T*>(all[i].send) + from;
      for (int64_t k = 0; k < count; ++k) acc[k] += Widen<A>(src[k]);
    }
    for (int64_t k = 0; k < count; ++k) out[k] = Narrow<T>(acc[k]);
  }

  template <typename T, typename A>
  Status AllReduce(MutableBuffer data) {
    CollArgs mine =
        Args(CollKind::kAllReduceSum, ConstBuffer{data.data, data.count, data.dtype}, {});
    std::vector<T> sum(static_cast<size_t>(data.count));
    Status s = Collective(mine, [&](const std::vector<CollArgs>& all) -> Status {
      RETURN_IF_ERROR(SameSendSize("AllReduceSum", all));
      SumBlock<T, A>(all, 0, data.count, sum.data());
      return Status::Ok();
    });
    // Written only after every rank has finished reading the inputs (in place).
    if (s.ok()) std::copy(sum.begin(), sum.end(), static_cast<T*>(data.data));
    return s;
  }

  template <typename T, typename A>
  Status ReduceScatter(ConstBuffer send, MutableBuffer recv, std::span<const int64_t> recv_counts) {
    CollArgs mine = Args(CollKind::kReduceScatterV, send, recv);
    mine.recv_counts = recv_counts;
    return Collective(mine, [&](const std::vector<CollArgs>& all) -> Status {
      RETURN_IF_ERROR(SameSendSize("ReduceScatterV", all));
      for (int i = 0; i < size(); ++i) {
        for (int j = 0; j < size(); ++j) {
          if (all[i].recv_counts[j] != recv_counts[j]) {
            return core::InvalidArgument(fmt::format(
                "ReduceScatterV: rank {} has recv_counts[{}] = {}, rank {} has {}; recv_counts "
                "must be the same on every rank",
                rank(), j, recv_counts[j], i, all[i].recv_counts[j]));
          }
        }
      }
      int64_t from = 0;
      for (int j = 0; j < rank(); ++j) from += recv_counts[j];
      SumBlock<T, A>(all, from, recv.count, static_cast<T*>(recv.data));
      return Status::Ok();
    });
  }

  Status SameSendSize(const char* what, const std::vector<CollArgs>& all) const {
    for (int i = 0; i < size(); ++i) {
      if (all[i].send_elems != all[0].send_elems) {
        return core::InvalidArgument(fmt::format(
            "{}: rank 0 passes {} elements, rank {} passes {}; all ranks must pass the same "
            "length",
            what, all[0].send_elems, i, all[i].send_elems));
      }
    }
    return Status::Ok();
  }

  // Rendezvous of all ranks: waits for everybody (phase 1), runs `work` on every rank with
  // every rank's arguments (reading other ranks' inputs, writing only its own outputs),
  // then waits until everybody has finished `work` (phase 2) so no input is released early.
  Status Collective(const CollArgs& mine,
                    const std::function<Status(const std::vector<CollArgs>&)>& work) {
    const int n = size();
    const std::pair<uint64_t, uint64_t> key{context_, next_sequence_++};
    std::unique_lock<std::mutex> lock(hub_->mu);
    CollSlot& slot = hub_->slots.try_emplace(key, n).first->second;
    const char* what = CollName(mine.kind);
    auto given_up = [&] {
      return core::Unavailable(fmt::format("{} (rank {} of {}): another rank gave up on it: {}",
                                           what, rank(), n, slot.abandoned.ToString()));
    };
    if (!slot.abandoned.ok()) return given_up();
    slot.args[rank()] = mine;
    slot.present[rank()] = true;
    ++slot.arrived;
    hub_->cv.notify_all();
    int gone = -1;
    const bool ready = hub_->WaitFor(lock, op_timeout_s(), [&] {
      if (slot.arrived == n || !slot.abandoned.ok()) return true;
      for (int i = 0; i < n; ++i) {
        if (!slot.present[i] && hub_->exited[world_ranks()[i]]) gone = i;
      }
      return gone >= 0;
    });
    if (slot.arrived != n) {
      Status s;
      if (!slot.abandoned.ok()) {
        s = given_up();
      } else if (!ready) {
        std::vector<int> missing;
        for (int i = 0; i < n; ++i) {
          if (!slot.present[i]) missing.push_back(i);
        }
        s = core::DeadlineExceeded(
            fmt::format("{} (rank {} of {}): ranks [{}] did not join "
                        "within {} s",
                        what, rank(), n, fmt::join(missing, ", "), op_timeout_s()));
      } else {
        s = core::Unavailable(
            fmt::format("{}: rank {} (world rank {}) has exited", what, gone, world_ranks()[gone]));
      }
      if (slot.abandoned.ok()) slot.abandoned = s;  // kept, so late arrivals fail too
      slot.present[rank()] = false;
      --slot.arrived;
      hub_->cv.notify_all();
      return s;
    }
    lock.unlock();

    Status status;
    for (int i = 0; i < n && status.ok(); ++i) {
      if (slot.args[i].kind != mine.kind) {
        status =
            core::InvalidArgument(fmt::format("collective mismatch: rank {} called {}, "
                                              "rank {} called {}",
                                              rank(), what, i, CollName(slot.args[i].kind)));
      } else if (slot.args[i].dtype != mine.dtype) {
        status = core::InvalidArgument(
            fmt::format("{}: rank {} passes {} elements, rank {} passes {}; all ranks must pass "
                        "the same dtype",
                        what, rank(), DTypeName(mine.dtype), i, DTypeName(slot.args[i].dtype)));
      }
    }
    if (status.ok()) status = work(slot.args);

    lock.lock();
    ++slot.finished;
    hub_->cv.notify_all();
    hub_->cv.wait(lock, [&] { return slot.finished == n; });
    if (++slot.departed == n) hub_->slots.erase(key);
    return status;
  }

  std::shared_ptr<InProcessHub> hub_;
  uint64_t context_;
  uint64_t next_sequence_ = 0;
};

}  // namespace

InProcessWorld::InProcessWorld(int size) : size_(size) {
  CHECK(size >= 1) << "InProcessWorld size must be >= 1, got " << size;
  hub_ = std::make_shared<InProcessHub>(size);
}

std::unique_ptr<Communicator> InProcessWorld::Rank(int rank) {
  CHECK(rank >= 0 && rank < size_) << "rank " << rank << " outside [0, " << size_ << ")";
  std::vector<int> world(size_);
  for (int i = 0; i < size_; ++i) world[i] = i;
  return std::make_unique<InProcessCommunicator>(hub_, /*context=*/0, rank, std::move(world));
}

void InProcessWorld::MarkExited(int rank) {
  CHECK(rank >= 0 && rank < size_);
  std::lock_guard<std::mutex> lock(hub_->mu);
  hub_->exited[rank] = true;
  hub_->cv.notify_all();
}

void RunInProcessRanks(int n, const std::function<void(Communicator&)>& fn) {
  InProcessWorld world(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&world, &fn, r] {
      {
        std::unique_ptr<Communicator> comm = world.Rank(r);
        fn(*comm);
      }
      world.MarkExited(r);
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace tessera::comm
