// MpiCommunicator: the MPI backend of Communicator (communicator.h), owning one MPI_Comm with
// MPI_ERRORS_RETURN set. Obtain the world communicator from MpiEnvironment::world();
// sub-communicators come from Sub() (MPI_Comm_create_group: only the members take part).
//
// Collectives use MPI's native collectives (MPI_Alltoallv, MPI_Allgatherv, MPI_Allgather,
// MPI_Allreduce, MPI_Reduce_scatter, MPI_Bcast, MPI_Barrier) on MPI_FLOAT, MPI_DOUBLE,
// MPI_INT64_T and, for bf16 data movement, MPI_UINT16_T (bit for bit). bf16 sums convert to
// fp32, reduce with MPI_SUM on MPI_FLOAT and round to nearest even once, so every rank gets
// the same bits (MPI gives all ranks the same fp32 all-reduce result). With an op timeout set,
// the non-blocking forms (MPI_Ialltoallv, ...) are polled against the deadline instead, and
// a collective that misses it returns DeadlineExceeded and breaks the communicator (its MPI
// request cannot be cancelled; it is kept and drained for at most 1 s at destruction).
// Point-to-point uses MPI_Isend / MPI_Irecv; Request::Wait polls MPI_Test against the
// deadline when a timeout is set, MPI_Wait otherwise. Counts and displacements must fit in
// an int (MPI-3 interfaces); larger ones return InvalidArgument. Sub() cannot time out; its
// MPI_Comm_create_group traffic runs on the parent with a tag above kMaxTag derived from the
// rank set, so it never matches user point-to-point messages.
//
// Thread-safety: as Communicator (one thread at a time). Must be destroyed before
// MPI_Finalize (MpiEnvironment does this for the world and, through it, every sub).
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/mpi_util.h"

namespace tessera::comm {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm` (sets MPI_ERRORS_RETURN on it). world_ranks[i] is the world
  // rank of rank i of `comm`.
  static StatusOr<std::unique_ptr<MpiCommunicator>> Create(MpiComm comm,
                                                           std::vector<int> world_ranks);
  ~MpiCommunicator() override;

  MPI_Comm handle() const { return comm_.get(); }
  // Prints "<world rank>: <status>" to stderr and calls MPI_Abort(MPI_COMM_WORLD, 1).
  [[noreturn]] void Abort(const Status& status) override;

 protected:
  Status DoAllToAllV(ConstBuffer send, std::span<const int64_t> send_counts,
                     std::span<const int64_t> send_displs, MutableBuffer recv,
                     std::span<const int64_t> recv_counts,
                     std::span<const int64_t> recv_displs) override;
  Status DoAllGatherV(ConstBuffer send, MutableBuffer recv, std::span<const int64_t> recv_counts,
                      std::span<const int64_t> recv_displs) override;
  Status DoAllGather(ConstBuffer send, MutableBuffer recv) override;
  Status DoAllReduceSum(MutableBuffer data) override;
  Status DoReduceScatterV(ConstBuffer send, MutableBuffer recv,
                          std::span<const int64_t> recv_counts) override;
  Status DoBroadcast(MutableBuffer data, int root) override;
  Status DoBarrier() override;
  StatusOr<std::unique_ptr<RequestImpl>> DoISend(std::span<const float> data, int dst,
                                                 int tag) override;
  StatusOr<std::unique_ptr<RequestImpl>> DoIRecv(std::span<float> data, int src, int tag) override;
  StatusOr<std::unique_ptr<Communicator>> DoSub(const std::vector<int>& ranks) override;

 private:
  MpiCommunicator(MpiComm comm, int rank, std::vector<int> world_ranks);

  // Runs a collective: `blocking()` when no op timeout is set, otherwise `start(&request)`
  // and a deadline-bounded wait on the request. Both return an MPI error code.
  template <typename Blocking, typename Start>
  Status RunCollective(const char* what, Blocking blocking, Start start);

  // Keeps an internal buffer of a timed-out collective alive (MPI may still write to it).
  void KeepScratchIfAbandoned(const Status& s, std::vector<float> scratch);

  MpiComm comm_;
  std::vector<MPI_Request> abandoned_;                 // timed-out non-blocking collectives
  std::vector<std::vector<float>> abandoned_scratch_;  // their fp32 scratch buffers (bf16 sums)
};

}  // namespace tessera::comm
