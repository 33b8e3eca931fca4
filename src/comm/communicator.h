// Communicator: a group of ranks that exchange typed buffers, with collectives, non-blocking
// point-to-point and cached sub-communicators. Backends: MPI (mpi_communicator.h), an
// in-process backend with one thread per rank (in_process_communicator.h) and an elastic one over
// AmTransport (am_communicator.h: survives a member's death and reconfigures in place); all give
// the semantics documented here.
//
// Element types (dtype.h): every collective (AllToAllV, AllGatherV, AllGather, AllReduceSum,
// ReduceScatter(V), Broadcast) has an overload for float (f32), Bf16 (bf16), int64_t (i64)
// and double (f64); all ranks pass the same type to a collective. Sums of bf16 accumulate in
// fp32 and round to nearest even once at the end; int64 sums are exact and must not
// overflow. Point-to-point (ISend/IRecv/Send/Recv) moves fp32 only. Helpers over the
// collectives: AllGatherValue (below: one value per rank, instead of summing one-hot
// vectors), BroadcastResult (broadcast_result.h: a StatusOr computed on one rank).
//
// Units and layouts: every count and displacement is in elements of the buffer's type (not
// bytes). A v-collective block i is `counts[i]` elements starting at element `displs[i]`.
// Ranks are numbered 0..size()-1 within this communicator; world_ranks() maps them to the
// ranks of the backend's world communicator.
//
// Collective rules (as in MPI): every rank of the communicator calls the same collectives in
// the same order, with matching sizes (e.g. recv_counts[j] on rank i equals send_counts[i]
// on rank j). Send and receive buffers must not overlap. The in-process backend detects mismatched
// calls and returns InvalidArgument on every rank; MPI may not detect them.
//
// Errors: argument errors are detected locally before any communication and return
// InvalidArgument without side effects. Backend failures return Internal (with the MPI error
// string). A peer that is gone returns Unavailable. When an op timeout is set
// (set_op_timeout_s), blocking collectives, Sub() on the in-process backend and Request::Wait
// return DeadlineExceeded after that many seconds. After a collective or Sub() fails with
// DeadlineExceeded or Unavailable the communicator is broken: ranks no longer agree on how
// far they got, and every later call returns FailedPrecondition. The usual reaction is
// Abort(status), which terminates every rank of the job.
//
// Bounded failure when a rank dies: under `mpirun`, OpenMPI aborts the whole job when any
// process exits with a non-zero code, on a signal, or without calling MPI_Finalize (measured
// here: all ranks gone ~1.5 s after the death). A rank that hangs instead of dying is
// caught by the op timeout watchdog above. The in-process backend reports Unavailable to ranks that
// wait for a rank whose thread has returned.
//
// Thread-safety: a Communicator (and its sub-communicators) is used by one thread at a time;
// the in-process backend runs one such thread per rank.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/buffer_layout.h"
#include "comm/dtype.h"
#include "comm/request.h"
#include "core/status.h"

namespace tessera::comm {

// A type-erased buffer for the backend hooks: `count` elements of `dtype` at `data`.
struct ConstBuffer {
  const void* data = nullptr;
  int64_t count = 0;
  DType dtype = DType::kF32;
  int64_t bytes() const { return count * DTypeSize(dtype); }
};
struct MutableBuffer {
  void* data = nullptr;
  int64_t count = 0;
  DType dtype = DType::kF32;
  int64_t bytes() const { return count * DTypeSize(dtype); }
};

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(world_ranks_.size()); }
  // world_ranks()[i] is the world rank of rank i of this communicator.
  const std::vector<int>& world_ranks() const { return world_ranks_; }
  int world_rank() const { return world_ranks_[rank_]; }

  // Per-operation timeout (the watchdog), in seconds; kNoTimeout (the default) disables it.
  // Applies to requests created afterwards and to later collectives. Sub-communicators
  // inherit the parent's value when created.
  void set_op_timeout_s(double timeout_s);
  double op_timeout_s() const { return op_timeout_s_; }
  // OK, or the error that broke this communicator.
  const Status& broken() const { return broken_; }

  // ---- Collectives (one overload per element type of dtype.h) ----------------------
  // AllToAllV: rank i sends send[send_displs[j] .. +send_counts[j]) to rank j, and receives
  //   the block from rank j into recv[recv_displs[j] .. +recv_counts[j]). Each counts/displs
  //   span has size() entries.
#define TESSERA_COMM_DECLARE_COLLECTIVES(T)                                                      \
  Status AllToAllV(std::span<const T> send, std::span<const int64_t> send_counts,                \
                   std::span<const int64_t> send_displs, std::span<T> recv,                      \
                   std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs);  \
  Status AllGatherV(std::span<const T> send, std::span<T> recv,                                  \
                    std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs); \
  Status AllGather(std::span<const T> send, std::span<T> recv);                                  \
  Status AllReduceSum(std::span<T> data);                                                        \
  Status ReduceScatter(std::span<const T> send, std::span<T> recv);                              \
  Status ReduceScatterV(std::span<const T> send, std::span<T> recv,                              \
                        std::span<const int64_t> recv_counts);                                   \
  Status Broadcast(std::span<T> data, int root);
  // AllGatherV: every rank contributes `send` (send.size() == recv_counts[rank()]) and
  //   receives rank j's contribution into recv[recv_displs[j] .. +recv_counts[j]).
  // AllGather: equal contributions: recv.size() == size() * send.size(); rank j's block at
  //   j * send.size().
  // AllReduceSum: in place: data[k] becomes the sum over ranks of data[k]. Every rank gets
  //   the same bits.
  // ReduceScatter: send.size() == size() * recv.size(); rank i receives block i (elements
  //   [i * recv.size(), (i + 1) * recv.size())) of the element-wise sum over ranks of `send`.
  // ReduceScatterV: the same with blocks of recv_counts[i] elements packed in rank order:
  //   send.size() == sum(recv_counts), recv.size() == recv_counts[rank()]; recv_counts is
  //   the same on every rank.
  // Broadcast: copies root's `data` into `data` on every other rank (same length everywhere).
  TESSERA_COMM_DECLARE_COLLECTIVES(float)
  TESSERA_COMM_DECLARE_COLLECTIVES(Bf16)
  TESSERA_COMM_DECLARE_COLLECTIVES(int64_t)
  TESSERA_COMM_DECLARE_COLLECTIVES(double)
#undef TESSERA_COMM_DECLARE_COLLECTIVES
  Status Barrier();

  // ---- Point-to-point ----------------------------------------------------------------
  // Non-blocking send of `data` to rank `dst` with tag in [0, kMaxTag]. Messages between a
  // pair of ranks with the same tag arrive in order. A send may complete only once the
  // receiver has posted a matching receive (the in-process backend always behaves so), so never
  // wait on a send before the matching receive is posted somewhere.
  StatusOr<Request> ISend(std::span<const float> data, int dst, int tag);
  // Non-blocking receive from rank `src` with `tag` into `data`. A message shorter than
  // `data` fills its prefix; a longer one fails the request with InvalidArgument (in-process) or
  // Internal "message truncated" (MPI).
  StatusOr<Request> IRecv(std::span<float> data, int src, int tag);
  // Blocking forms: ISend/IRecv then Wait() (with the op timeout).
  Status Send(std::span<const float> data, int dst, int tag);
  Status Recv(std::span<float> data, int src, int tag);

  // ---- Sub-communicators -------------------------------------------------------------
  // The sub-communicator of the ordered rank set `ranks` (ranks of THIS communicator; on the
  // world communicator they are world ranks): its rank i is ranks[i]. Created once per rank
  // set and cached: later calls with the same vector return the same object, owned by this
  // communicator and valid for its lifetime. The caller must be in `ranks`.
  //
  // Collective rule: creation involves only the members of `ranks` (MPI_Comm_create_group),
  // never the other ranks. Each member must create the sets it belongs to in one global
  // order agreed by all ranks (e.g. iterate the same list of groups on every rank and call
  // Sub only for the groups that contain this rank); creating overlapping sets in different
  // orders on different ranks can deadlock. Cached calls never communicate.
  StatusOr<Communicator*> Sub(const std::vector<int>& ranks);

  // Terminates every rank of the job with `status` as the reason (MPI_Abort for MPI).
  [[noreturn]] virtual void Abort(const Status& status) = 0;

  // True when the ranks are threads of one process (the in-process backend), so memory one rank
  // allocates is addressable by all (symmetric_memory.h relies on it).
  virtual bool ranks_share_address_space() const { return false; }

 protected:
  Communicator(int rank, std::vector<int> world_ranks);

  // Backend hooks, called after the arguments were validated and only on a usable
  // communicator; counts fit the buffers.
  // Type-erased collectives: buffers carry their dtype (the same for send and recv) and
  // counts/displacements are in elements of it.
  virtual Status DoAllToAllV(ConstBuffer send, std::span<const int64_t> send_counts,
                             std::span<const int64_t> send_displs, MutableBuffer recv,
                             std::span<const int64_t> recv_counts,
                             std::span<const int64_t> recv_displs) = 0;
  virtual Status DoAllGatherV(ConstBuffer send, MutableBuffer recv,
                              std::span<const int64_t> recv_counts,
                              std::span<const int64_t> recv_displs) = 0;
  virtual Status DoAllGather(ConstBuffer send, MutableBuffer recv) = 0;
  virtual Status DoAllReduceSum(MutableBuffer data) = 0;
  // send holds size() blocks of recv_counts[i] elements in rank order; recv gets this rank's.
  virtual Status DoReduceScatterV(ConstBuffer send, MutableBuffer recv,
                                  std::span<const int64_t> recv_counts) = 0;
  virtual Status DoBroadcast(MutableBuffer data, int root) = 0;
  virtual Status DoBarrier() = 0;
  virtual StatusOr<std::unique_ptr<RequestImpl>> DoISend(std::span<const float> data, int dst,
                                                         int tag) = 0;
  virtual StatusOr<std::unique_ptr<RequestImpl>> DoIRecv(std::span<float> data, int src,
                                                         int tag) = 0;
  // Creates the sub-communicator (ranks validated, caller is a member, not cached yet).
  virtual StatusOr<std::unique_ptr<Communicator>> DoSub(const std::vector<int>& ranks) = 0;

  // For elastic backends (am_communicator.h): replaces the membership in place. This rank
  // becomes `rank` of `world_ranks`, broken() is cleared, and the cached sub-communicators are
  // destroyed (pointers to them dangle; Sub() creates new ones). The op timeout is kept.
  void ResetMembership(int rank, std::vector<int> world_ranks);

 private:
  Status AllToAllVImpl(ConstBuffer send, std::span<const int64_t> send_counts,
                       std::span<const int64_t> send_displs, MutableBuffer recv,
                       std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs);
  Status AllGatherVImpl(ConstBuffer send, MutableBuffer recv, std::span<const int64_t> recv_counts,
                        std::span<const int64_t> recv_displs);
  Status AllGatherImpl(ConstBuffer send, MutableBuffer recv);
  Status AllReduceSumImpl(MutableBuffer data);
  Status ReduceScatterVImpl(ConstBuffer send, MutableBuffer recv,
                            std::span<const int64_t> recv_counts);
  Status BroadcastImpl(MutableBuffer data, int root);

  // Breaks the communicator when a collective failed in a way that desynchronises ranks.
  Status Track(Status status);

  int rank_;
  std::vector<int> world_ranks_;
  double op_timeout_s_ = kNoTimeout;
  Status broken_;
  std::map<std::vector<int>, std::unique_ptr<Communicator>> subs_;
};

// One value per rank: element j of the result is rank j's `value` (a typed AllGather; use
// it instead of summing one-hot vectors). Collective; T is float, Bf16, int64_t or double.
template <CommType T>
StatusOr<std::vector<T>> AllGatherValue(Communicator& comm, T value) {
  std::vector<T> all(static_cast<size_t>(comm.size()));
  RETURN_IF_ERROR(comm.AllGather(std::span<const T>(&value, 1), std::span<T>(all)));
  return all;
}

}  // namespace tessera::comm
