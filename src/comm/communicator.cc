#include "comm/communicator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace tessera::comm {

namespace {

template <typename T>
int64_t Bytes(std::span<T> s) {
  return static_cast<int64_t>(s.size_bytes());
}

}  // namespace

Communicator::Communicator(int rank, std::vector<int> world_ranks)
    : rank_(rank), world_ranks_(std::move(world_ranks)) {
  CHECK(!world_ranks_.empty());
  CHECK(rank_ >= 0 && rank_ < static_cast<int>(world_ranks_.size()));
}

Communicator::~Communicator() = default;

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

Status Communicator::AllToAllV(std::span<const float> send, std::span<const int64_t> send_counts,
                               std::span<const int64_t> send_displs, std::span<float> recv,
                               std::span<const int64_t> recv_counts,
                               std::span<const int64_t> recv_displs) {
  TESSERA_RETURN_IF_BROKEN("AllToAllV");
  RETURN_IF_ERROR(CheckVarLayout("AllToAllV send", send_counts, send_displs,
                                 static_cast<int64_t>(send.size()), size()));
  RETURN_IF_ERROR(CheckVarLayout("AllToAllV recv", recv_counts, recv_displs,
                                 static_cast<int64_t>(recv.size()), size()));
  RETURN_IF_ERROR(CheckNoOverlap("AllToAllV", send.data(), Bytes(send), recv.data(), Bytes(recv)));
  return Track(DoAllToAllV(send, send_counts, send_displs, recv, recv_counts, recv_displs));
}

Status Communicator::AllGatherV(std::span<const float> send, std::span<float> recv,
                                std::span<const int64_t> recv_counts,
                                std::span<const int64_t> recv_displs) {
  TESSERA_RETURN_IF_BROKEN("AllGatherV");
  RETURN_IF_ERROR(CheckVarLayout("AllGatherV recv", recv_counts, recv_displs,
                                 static_cast<int64_t>(recv.size()), size()));
  if (static_cast<int64_t>(send.size()) != recv_counts[rank_]) {
    return core::InvalidArgument(
        fmt::format("AllGatherV send: got {} elements, must equal recv_counts[{}] = {}",
                    send.size(), rank_, recv_counts[rank_]));
  }
  RETURN_IF_ERROR(CheckNoOverlap("AllGatherV", send.data(), Bytes(send), recv.data(), Bytes(recv)));
  return Track(DoAllGatherV(send, recv, recv_counts, recv_displs));
}

Status Communicator::AllGather(std::span<const float> send, std::span<float> recv) {
  TESSERA_RETURN_IF_BROKEN("AllGather");
  if (recv.size() != send.size() * static_cast<size_t>(size())) {
    return core::InvalidArgument(
        fmt::format("AllGather recv: got {} elements, must be size() * send.size() = {} * {}",
                    recv.size(), size(), send.size()));
  }
  RETURN_IF_ERROR(CheckNoOverlap("AllGather", send.data(), Bytes(send), recv.data(), Bytes(recv)));
  return Track(DoAllGather(send, recv));
}

Status Communicator::AllReduceSum(std::span<float> data) {
  TESSERA_RETURN_IF_BROKEN("AllReduceSum");
  return Track(DoAllReduceSum(data));
}

Status Communicator::AllReduceSum(std::span<double> data) {
  TESSERA_RETURN_IF_BROKEN("AllReduceSum");
  return Track(DoAllReduceSum(data));
}

Status Communicator::Broadcast(std::span<float> data, int root) {
  TESSERA_RETURN_IF_BROKEN("Broadcast");
  RETURN_IF_ERROR(CheckPeer("Broadcast root", root, size()));
  return Track(DoBroadcast(data, root));
}

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
