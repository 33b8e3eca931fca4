#include "comm/communicator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace tessera::comm {

Communicator::Communicator(int rank, std::vector<int> world_ranks)
    : rank_(rank), world_ranks_(std::move(world_ranks)) {
  CHECK(!world_ranks_.empty());
  CHECK(rank_ >= 0 && rank_ < static_cast<int>(world_ranks_.size()));
}

Communicator::~Communicator() = default;

void Communicator::ResetMembership(int rank, std::vector<int> world_ranks) {
  CHECK(!world_ranks.empty());
  CHECK(rank >= 0 && rank < static_cast<int>(world_ranks.size()));
  subs_.clear();
  rank_ = rank;
  world_ranks_ = std::move(world_ranks);
  broken_ = Status::Ok();
}

void Communicator::set_op_timeout_s(double timeout_s) {
  CHECK(timeout_s >= 0) << "op timeout must be >= 0, got " << timeout_s;
  op_timeout_s_ = timeout_s;
}

Status Communicator::Track(Status status) {
  if (status.code() == core::StatusCode::kDeadlineExceeded ||
      status.code() == core::StatusCode::kUnavailable) {
    broken_ = status;
  }
  return status;
}

#define TESSERA_RETURN_IF_BROKEN(what)                                            \
  do {                                                                            \
    if (!broken_.ok()) {                                                          \
      return core::FailedPrecondition(                                            \
          std::string(what) +                                                     \
          ": communicator is broken by an earlier error: " + broken_.ToString()); \
    }                                                                             \
  } while (0)

namespace {

template <typename T>
ConstBuffer In(std::span<const T> s) {
  return {s.data(), static_cast<int64_t>(s.size()), kDTypeOf<T>};
}
template <typename T>
MutableBuffer Out(std::span<T> s) {
  return {s.data(), static_cast<int64_t>(s.size()), kDTypeOf<T>};
}

}  // namespace

Status Communicator::AllToAllVImpl(ConstBuffer send, std::span<const int64_t> send_counts,
                                   std::span<const int64_t> send_displs, MutableBuffer recv,
                                   std::span<const int64_t> recv_counts,
                                   std::span<const int64_t> recv_displs) {
  TESSERA_RETURN_IF_BROKEN("AllToAllV");
  RETURN_IF_ERROR(CheckVarLayout("AllToAllV send", send_counts, send_displs, send.count, size()));
  RETURN_IF_ERROR(CheckVarLayout("AllToAllV recv", recv_counts, recv_displs, recv.count, size()));
  RETURN_IF_ERROR(CheckNoOverlap("AllToAllV", send.data, send.bytes(), recv.data, recv.bytes()));
  return Track(DoAllToAllV(send, send_counts, send_displs, recv, recv_counts, recv_displs));
}

Status Communicator::AllGatherVImpl(ConstBuffer send, MutableBuffer recv,
                                    std::span<const int64_t> recv_counts,
                                    std::span<const int64_t> recv_displs) {
  TESSERA_RETURN_IF_BROKEN("AllGatherV");
  RETURN_IF_ERROR(CheckVarLayout("AllGatherV recv", recv_counts, recv_displs, recv.count, size()));
  if (send.count != recv_counts[rank_]) {
    return core::InvalidArgument(
        fmt::format("AllGatherV send: got {} elements, must equal recv_counts[{}] = {}", send.count,
                    rank_, recv_counts[rank_]));
  }
  RETURN_IF_ERROR(CheckNoOverlap("AllGatherV", send.data, send.bytes(), recv.data, recv.bytes()));
  return Track(DoAllGatherV(send, recv, recv_counts, recv_displs));
}

Status Communicator::AllGatherImpl(ConstBuffer send, MutableBuffer recv) {
  TESSERA_RETURN_IF_BROKEN("AllGather");
  if (recv.count != send.count * size()) {
    return core::InvalidArgument(
        fmt::format("AllGather recv: got {} elements, must be size() * send.size() = {} * {}",
                    recv.count, size(), send.count));
  }
  RETURN_IF_ERROR(CheckNoOverlap("AllGather", send.data, send.bytes(), recv.data, recv.bytes()));
  return Track(DoAllGather(send, recv));
}

Status Communicator::AllReduceSumImpl(MutableBuffer data) {
  TESSERA_RETURN_IF_BROKEN("AllReduceSum");
  return Track(DoAllReduceSum(data));
}

Status Communicator::ReduceScatterVImpl(ConstBuffer send, MutableBuffer recv,
                                        std::span<const int64_t> recv_counts) {
  TESSERA_RETURN_IF_BROKEN("ReduceScatterV");
  if (static_cast<int>(recv_counts.size()) != size()) {
    return core::InvalidArgument(
        fmt::format("ReduceScatterV recv_counts: got {} entries, must have size() = {}",
                    recv_counts.size(), size()));
  }
  int64_t total = 0;
  for (int i = 0; i < size(); ++i) {
    if (recv_counts[i] < 0) {
      return core::InvalidArgument(
          fmt::format("ReduceScatterV recv_counts[{}]: got {}, must be >= 0", i, recv_counts[i]));
    }
    total += recv_counts[i];
  }
  if (send.count != total) {
    return core::InvalidArgument(
        fmt::format("ReduceScatterV send: got {} elements, must equal sum(recv_counts) = {}",
                    send.count, total));
  }
  if (recv.count != recv_counts[rank_]) {
    return core::InvalidArgument(
        fmt::format("ReduceScatterV recv: got {} elements, must equal recv_counts[{}] = {}",
                    recv.count, rank_, recv_counts[rank_]));
  }
  RETURN_IF_ERROR(
      CheckNoOverlap("ReduceScatterV", send.data, send.bytes(), recv.data, recv.bytes()));
  return Track(DoReduceScatterV(send, recv, recv_counts));
}

Status Communicator::BroadcastImpl(MutableBuffer data, int root) {
  TESSERA_RETURN_IF_BROKEN("Broadcast");
  RETURN_IF_ERROR(CheckPeer("Broadcast root", root, size()));
  return Track(DoBroadcast(data, root));
}

// The typed front ends: validation and dispatch live in the *Impl functions above.
#define TESSERA_COMM_DEFINE_COLLECTIVES(T)                                                         \
  Status Communicator::AllToAllV(std::span<const T> send, std::span<const int64_t> send_counts,    \
                                 std::span<const int64_t> send_displs, std::span<T> recv,          \
                                 std::span<const int64_t> recv_counts,                             \
                                 std::span<const int64_t> recv_displs) {                           \
    return AllToAllVImpl(In(send), send_counts, send_displs, Out(recv), recv_counts, recv_displs); \
  }                                                                                                \
  Status Communicator::AllGatherV(std::span<const T> send, std::span<T> recv,                      \
                                  std::span<const int64_t> recv_counts,                            \
                                  std::span<const int64_t> recv_displs) {                          \
    return AllGatherVImpl(In(send), Out(recv), recv_counts, recv_displs);                          \
  }                                                                                                \
  Status Communicator::AllGather(std::span<const T> send, std::span<T> recv) {                     \
    return AllGatherImpl(In(send), Out(recv));                                                     \
  }                                                                                                \
  Status Communicator::AllReduceSum(std::span<T> data) { return AllReduceSumImpl(Out(data)); }     \
  Status Communicator::ReduceScatter(std::span<const T> send, std::span<T> recv) {                 \
    if (send.size() != recv.size() * static_cast<size_t>(size())) {                                \
      return core::InvalidArgument(fmt::format(                                                    \
          "ReduceScatter send: got {} elements, must be size() * recv.size() = {} * {}",           \
          send.size(), size(), recv.size()));                                                      \
    }                                                                                              \
    const std::vector<int64_t> counts(size(), static_cast<int64_t>(recv.size()));                  \
    return ReduceScatterVImpl(In(send), Out(recv), counts);                                        \
  }                                                                                                \
  Status Communicator::ReduceScatterV(std::span<const T> send, std::span<T> recv,                  \
                                      std::span<const int64_t> recv_counts) {                      \
    return ReduceScatterVImpl(In(send), Out(recv), recv_counts);                                   \
  }                                                                                                \
  Status Communicator::Broadcast(std::span<T> data, int root) {                                    \
    return BroadcastImpl(Out(data), root);                                                         \
  }
TESSERA_COMM_DEFINE_COLLECTIVES(float)
TESSERA_COMM_DEFINE_COLLECTIVES(Bf16)
TESSERA_COMM_DEFINE_COLLECTIVES(int64_t)
TESSERA_COMM_DEFINE_COLLECTIVES(double)
#undef TESSERA_COMM_DEFINE_COLLECTIVES

Status Communicator::Barrier() {
  TESSERA_RETURN_IF_BROKEN("Barrier");
  return Track(DoBarrier());
}

StatusOr<Request> Communicator::ISend(std::span<const float> data, int dst, int tag) {
  TESSERA_RETURN_IF_BROKEN("ISend");
  RETURN_IF_ERROR(CheckPeer("ISend dst", dst, size()));
  RETURN_IF_ERROR(CheckTag("ISend", tag));
  ASSIGN_OR_RETURN(std::unique_ptr<RequestImpl> impl, DoISend(data, dst, tag));
  return Request(std::move(impl), op_timeout_s_);
}

StatusOr<Request> Communicator::IRecv(std::span<float> data, int src, int tag) {
  TESSERA_RETURN_IF_BROKEN("IRecv");
  RETURN_IF_ERROR(CheckPeer("IRecv src", src, size()));
  RETURN_IF_ERROR(CheckTag("IRecv", tag));
  ASSIGN_OR_RETURN(std::unique_ptr<RequestImpl> impl, DoIRecv(data, src, tag));
  return Request(std::move(impl), op_timeout_s_);
}

Status Communicator::Send(std::span<const float> data, int dst, int tag) {
  ASSIGN_OR_RETURN(Request request, ISend(data, dst, tag));
  return request.Wait();
}

Status Communicator::Recv(std::span<float> data, int src, int tag) {
  ASSIGN_OR_RETURN(Request request, IRecv(data, src, tag));
  return request.Wait();
}

StatusOr<Communicator*> Communicator::Sub(const std::vector<int>& ranks) {
  auto it = subs_.find(ranks);
  if (it != subs_.end()) return it->second.get();
  TESSERA_RETURN_IF_BROKEN("Sub");
  if (ranks.empty()) return core::InvalidArgument("Sub ranks: got an empty set, need >= 1 rank");
  std::set<int> seen;
  for (int r : ranks) {
    RETURN_IF_ERROR(CheckPeer("Sub ranks", r, size()));
    if (!seen.insert(r).second) {
      return core::InvalidArgument(
          fmt::format("Sub ranks: rank {} appears twice in [{}], ranks must be distinct", r,
                      fmt::join(ranks, ", ")));
    }
  }
  if (!seen.count(rank_)) {
    return core::InvalidArgument(
        fmt::format("Sub ranks: the caller (rank {}) is not in [{}]; only members call Sub", rank_,
                    fmt::join(ranks, ", ")));
  }
  StatusOr<std::unique_ptr<Communicator>> sub = DoSub(ranks);
  if (!sub.ok()) return Track(sub.status());
  Communicator* raw = sub->get();
  raw->set_op_timeout_s(op_timeout_s_);
  subs_.emplace(ranks, std::move(sub).value());
  return raw;
}

#undef TESSERA_RETURN_IF_BROKEN

}  // namespace tessera::comm
