#include "comm/mpi_communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <iostream>

namespace tessera::comm {

namespace {

StatusOr<int> ToInt(int64_t v, const char* what) {
  if (v > INT_MAX) {
    return core::InvalidArgument(
        fmt::format("{}: got {} elements, the MPI backend allows at most {}", what, v, INT_MAX));
  }
  return static_cast<int>(v);
}

StatusOr<std::vector<int>> ToInts(std::span<const int64_t> v, const char* what) {
  std::vector<int> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    ASSIGN_OR_RETURN(out[i], ToInt(v[i], what));
  }
  return out;
}

// The MPI datatype that moves elements of `t` bit for bit (bf16 travels as uint16).
MPI_Datatype MoveType(DType t) {
  switch (t) {
    case DType::kF32:
      return MPI_FLOAT;
    case DType::kBF16:
      return MPI_UINT16_T;
    case DType::kI64:
      return MPI_INT64_T;
    case DType::kF64:
      return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

// A point-to-point MPI request.
class MpiRequest final : public RequestImpl {
 public:
  MpiRequest(MPI_Request request, std::string what) : request_(request), what_(std::move(what)) {}

  StatusOr<bool> Test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    RETURN_IF_ERROR(MpiStatus(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), what_));
    return done != 0;
  }

  Status Wait(double timeout_s) override {
    if (request_ == MPI_REQUEST_NULL) return Status::Ok();
    return MpiWaitFor(&request_, timeout_s, what_);
  }

  void Cancel() override {
    if (request_ == MPI_REQUEST_NULL || MpiFinalized()) return;
    MPI_Cancel(&request_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    Status s = MpiWaitUntil(&request_, deadline, what_);
    if (s.code() == core::StatusCode::kDeadlineExceeded && request_ != MPI_REQUEST_NULL) {
      std::cerr << "tessera comm: warning: abandoning pending " << what_
                << " (could not cancel within 1 s)\n";
      MPI_Request_free(&request_);
    }
    request_ = MPI_REQUEST_NULL;
  }

 private:
  MPI_Request request_;
  std::string what_;
};

// A tag above every user tag (kMaxTag) for the internal traffic of MPI_Comm_create_group on
// the parent communicator, derived from the rank set so distinct sets use distinct tags.
int CreateGroupTag(MPI_Comm comm, const std::vector<int>& ranks) {
  uint64_t h = 1469598103934665603ULL;
  for (int r : ranks) h = (h ^ static_cast<uint64_t>(r + 1)) * 1099511628211ULL;
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &found);
  const int64_t ub = (found && tag_ub != nullptr) ? *tag_ub : kMaxTag;
  if (ub > kMaxTag) return static_cast<int>(kMaxTag + 1 + h % static_cast<uint64_t>(ub - kMaxTag));
  return static_cast<int>(h % static_cast<uint64_t>(ub + 1));
}

}  // namespace

MpiCommunicator::MpiCommunicator(MpiComm comm, int rank, std::vector<int> world_ranks)
    : Communicator(rank, std::move(world_ranks)), comm_(std::move(comm)) {}

StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(MpiComm comm,
                                                                   std::vector<int> world_ranks) {
  MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(comm.get(), MPI_ERRORS_RETURN));
  int rank = 0;
  int size = 0;
  MPI_RETURN_IF_ERROR(MPI_Comm_rank(comm.get(), &rank));
  MPI_RETURN_IF_ERROR(MPI_Comm_size(comm.get(), &size));
  if (static_cast<int>(world_ranks.size()) != size) {
    return core::InvalidArgument(
        fmt::format("MpiCommunicator world_ranks: got {} entries for a communicator of size {}",
                    world_ranks.size(), size));
  }
  return std::unique_ptr<MpiCommunicator>(
      new MpiCommunicator(std::move(comm), rank, std::move(world_ranks)));
}

MpiCommunicator::~MpiCommunicator() {
  if (abandoned_.empty() || MpiFinalized()) return;
  // Give timed-out collectives a last chance to finish (late peers); otherwise leak them.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (MPI_Request& r : abandoned_) {
    if (!MpiWaitUntil(&r, deadline, "abandoned collective").ok()) {
      std::cerr << "tessera comm: warning: leaking a timed-out collective request\n";
    }
  }
}

void MpiCommunicator::Abort(const Status& status) { MpiAbort(status); }

template <typename Blocking, typename Start>
Status MpiCommunicator::RunCollective(const char* what, Blocking blocking, Start start) {
  const std::string where = fmt::format("{} (rank {} of {})", what, rank(), size());
  if (std::isinf(op_timeout_s())) return MpiStatus(blocking(), where);
  MPI_Request request = MPI_REQUEST_NULL;
  RETURN_IF_ERROR(MpiStatus(start(&request), where));
  Status s = MpiWaitFor(&request, op_timeout_s(), where);
  if (s.code() == core::StatusCode::kDeadlineExceeded) abandoned_.push_back(request);
  return s;
}

Status MpiCommunicator::DoAllToAllV(ConstBuffer send, std::span<const int64_t> send_counts,
                                    std::span<const int64_t> send_displs, MutableBuffer recv,
                                    std::span<const int64_t> recv_counts,
                                    std::span<const int64_t> recv_displs) {
  ASSIGN_OR_RETURN(std::vector<int> sc, ToInts(send_counts, "AllToAllV send_counts"));
  ASSIGN_OR_RETURN(std::vector<int> sd, ToInts(send_displs, "AllToAllV send_displs"));
  ASSIGN_OR_RETURN(std::vector<int> rc, ToInts(recv_counts, "AllToAllV recv_counts"));
  ASSIGN_OR_RETURN(std::vector<int> rd, ToInts(recv_displs, "AllToAllV recv_displs"));
  MPI_Comm c = comm_.get();
  const MPI_Datatype t = MoveType(send.dtype);
  return RunCollective(
      "MPI_Alltoallv",
      [&] {
        return MPI_Alltoallv(send.data, sc.data(), sd.data(), t, recv.data, rc.data(), rd.data(), t,
                             c);
      },
      [&](MPI_Request* r) {
        return MPI_Ialltoallv(send.data, sc.data(), sd.data(), t, recv.data, rc.data(), rd.data(),
                              t, c, r);
      });
}

Status MpiCommunicator::DoAllGatherV(ConstBuffer send, MutableBuffer recv,
                                     std::span<const int64_t> recv_counts,
                                     std::span<const int64_t> recv_displs) {
  ASSIGN_OR_RETURN(int n, ToInt(send.count, "AllGatherV send"));
  ASSIGN_OR_RETURN(std::vector<int> rc, ToInts(recv_counts, "AllGatherV recv_counts"));
  ASSIGN_OR_RETURN(std::vector<int> rd, ToInts(recv_displs, "AllGatherV recv_displs"));
  MPI_Comm c = comm_.get();
  const MPI_Datatype t = MoveType(send.dtype);
  return RunCollective(
      "MPI_Allgatherv",
      [&] { return MPI_Allgatherv(send.data, n, t, recv.data, rc.data(), rd.data(), t, c); },
      [&](MPI_Request* r) {
        return MPI_Iallgatherv(send.data, n, t, recv.data, rc.data(), rd.data(), t, c, r);
      });
}

Status MpiCommunicator::DoAllGather(ConstBuffer send, MutableBuffer recv) {
  ASSIGN_OR_RETURN(int n, ToInt(send.count, "AllGather send"));
  MPI_Comm c = comm_.get();
  const MPI_Datatype t = MoveType(send.dtype);
  return RunCollective(
      "MPI_Allgather", [&] { return MPI_Allgather(send.data, n, t, recv.data, n, t, c); },
      [&](MPI_Request* r) { return MPI_Iallgather(send.data, n, t, recv.data, n, t, c, r); });
}

Status MpiCommunicator::DoAllReduceSum(MutableBuffer data) {
  ASSIGN_OR_RETURN(int n, ToInt(data.count, "AllReduceSum data"));
  MPI_Comm c = comm_.get();
  if (data.dtype == DType::kBF16) {
    // Sum in fp32 (MPI gives every rank the same fp32 bits), then round each element once.
    Bf16* bf = static_cast<Bf16*>(data.data);
    std::vector<float> wide(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) wide[k] = Bf16ToFloat(bf[k]);
    Status s = RunCollective(
        "MPI_Allreduce(bf16 as f32)",
        [&] { return MPI_Allreduce(MPI_IN_PLACE, wide.data(), n, MPI_FLOAT, MPI_SUM, c); },
        [&](MPI_Request* r) {
          return MPI_Iallreduce(MPI_IN_PLACE, wide.data(), n, MPI_FLOAT, MPI_SUM, c, r);
        });
    if (!s.ok()) {
      KeepScratchIfAbandoned(s, std::move(wide));
      return s;
    }
    for (int k = 0; k < n; ++k) bf[k] = FloatToBf16(wide[k]);
    return s;
  }
  const MPI_Datatype t = MoveType(data.dtype);
  const std::string what = fmt::format("MPI_Allreduce({})", DTypeName(data.dtype));
  return RunCollective(
      what.c_str(), [&] { return MPI_Allreduce(MPI_IN_PLACE, data.data, n, t, MPI_SUM, c); },
      [&](MPI_Request* r) { return MPI_Iallreduce(MPI_IN_PLACE, data.data, n, t, MPI_SUM, c, r); });
}

Status MpiCommunicator::DoReduceScatterV(ConstBuffer send, MutableBuffer recv,
                                         std::span<const int64_t> recv_counts) {
  ASSIGN_OR_RETURN(std::vector<int> rc, ToInts(recv_counts, "ReduceScatterV recv_counts"));
  RETURN_IF_ERROR(ToInt(send.count, "ReduceScatterV send").status());
  MPI_Comm c = comm_.get();
  if (send.dtype == DType::kBF16) {
    // As AllReduceSum: reduce in fp32, round this rank's block once.
    const Bf16* in = static_cast<const Bf16*>(send.data);
    std::vector<float> wide_send(static_cast<size_t>(send.count));
    std::vector<float> wide_recv(static_cast<size_t>(recv.count));
    for (int64_t k = 0; k < send.count; ++k) wide_send[k] = Bf16ToFloat(in[k]);
    Status s = RunCollective(
        "MPI_Reduce_scatter(bf16 as f32)",
        [&] {
          return MPI_Reduce_scatter(wide_send.data(), wide_recv.data(), rc.data(), MPI_FLOAT,
                                    MPI_SUM, c);
        },
        [&](MPI_Request* r) {
          return MPI_Ireduce_scatter(wide_send.data(), wide_recv.data(), rc.data(), MPI_FLOAT,
                                     MPI_SUM, c, r);
        });
    if (!s.ok()) {
      KeepScratchIfAbandoned(s, std::move(wide_send));
      KeepScratchIfAbandoned(s, std::move(wide_recv));
      return s;
    }
    Bf16* out = static_cast<Bf16*>(recv.data);
    for (int64_t k = 0; k < recv.count; ++k) out[k] = FloatToBf16(wide_recv[k]);
    return s;
  }
  const MPI_Datatype t = MoveType(send.dtype);
  const std::string what = fmt::format("MPI_Reduce_scatter({})", DTypeName(send.dtype));
  // MPI needs a valid receive pointer even for an empty block.
  int64_t dummy = 0;
  void* out = recv.count > 0 ? recv.data : &dummy;
  return RunCollective(
      what.c_str(), [&] { return MPI_Reduce_scatter(send.data, out, rc.data(), t, MPI_SUM, c); },
      [&](MPI_Request* r) {
        return MPI_Ireduce_scatter(send.data, out, rc.data(), t, MPI_SUM, c, r);
      });
}

Status MpiCommunicator::DoBroadcast(MutableBuffer data, int root) {
  ASSIGN_OR_RETURN(int n, ToInt(data.count, "Broadcast data"));
  MPI_Comm c = comm_.get();
  const MPI_Datatype t = MoveType(data.dtype);
  return RunCollective(
      "MPI_Bcast", [&] { return MPI_Bcast(data.data, n, t, root, c); },
      [&](MPI_Request* r) { return MPI_Ibcast(data.data, n, t, root, c, r); });
}

void MpiCommunicator::KeepScratchIfAbandoned(const Status& s, std::vector<float> scratch) {
  if (s.code() == core::StatusCode::kDeadlineExceeded) {
    abandoned_scratch_.push_back(std::move(scratch));
  }
}

Status MpiCommunicator::DoBarrier() {
  MPI_Comm c = comm_.get();
  return RunCollective(
      "MPI_Barrier", [&] { return MPI_Barrier(c); },
      [&](MPI_Request* r) { return MPI_Ibarrier(c, r); });
}

StatusOr<std::unique_ptr<RequestImpl>> MpiCommunicator::DoISend(std::span<const float> data,
                                                                int dst, int tag) {
  ASSIGN_OR_RETURN(int n, ToInt(static_cast<int64_t>(data.size()), "ISend data"));
  std::string what =
      fmt::format("MPI_Isend from rank {} to rank {} tag {} ({} elements)", rank(), dst, tag, n);
  MPI_Request request = MPI_REQUEST_NULL;
  RETURN_IF_ERROR(
      MpiStatus(MPI_Isend(data.data(), n, MPI_FLOAT, dst, tag, comm_.get(), &request), what));
  return std::unique_ptr<RequestImpl>(std::make_unique<MpiRequest>(request, std::move(what)));
}

StatusOr<std::unique_ptr<RequestImpl>> MpiCommunicator::DoIRecv(std::span<float> data, int src,
                                                                int tag) {
  ASSIGN_OR_RETURN(int n, ToInt(static_cast<int64_t>(data.size()), "IRecv data"));
  std::string what =
      fmt::format("MPI_Irecv on rank {} from rank {} tag {} ({} elements)", rank(), src, tag, n);
  MPI_Request request = MPI_REQUEST_NULL;
  RETURN_IF_ERROR(
      MpiStatus(MPI_Irecv(data.data(), n, MPI_FLOAT, src, tag, comm_.get(), &request), what));
  return std::unique_ptr<RequestImpl>(std::make_unique<MpiRequest>(request, std::move(what)));
}

StatusOr<std::unique_ptr<Communicator>> MpiCommunicator::DoSub(const std::vector<int>& ranks) {
  MpiGroup parent_group;
  MpiGroup sub_group;
  MPI_RETURN_IF_ERROR(MPI_Comm_group(comm_.get(), parent_group.out()));
  MPI_RETURN_IF_ERROR(MPI_Group_incl(parent_group.get(), static_cast<int>(ranks.size()),
                                     ranks.data(), sub_group.out()));
  MPI_Comm raw = MPI_COMM_NULL;
  MPI_RETURN_IF_ERROR(MPI_Comm_create_group(comm_.get(), sub_group.get(),
                                            CreateGroupTag(comm_.get(), ranks), &raw));
  MpiComm sub(raw);
  std::vector<int> world;
  world.reserve(ranks.size());
  for (int r : ranks) world.push_back(world_ranks()[r]);
  ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> comm, Create(std::move(sub), std::move(world)));
  const int expected =
      static_cast<int>(std::find(ranks.begin(), ranks.end(), rank()) - ranks.begin());
  CHECK_EQ(comm->rank(), expected);
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace tessera::comm
