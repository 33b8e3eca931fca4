// AmCommunicator: the elastic Communicator backend over AmTransport (am_transport.h), through
// an AmWorld (am_world.h) -- the communicator of ElasWave's training processes (their TP, DP and
// pipeline traffic). It implements the Communicator contract of communicator.h and adds:
//  - failure without hangs: when a member process dies (its transport connection fails) or
//    the caller injects AmWorld::MarkDead (a hung peer), every operation on every group that
//    contains it fails promptly with Unavailable "OP (rank R of N, epoch E): world rank 5
//    (127.0.0.1:PORT) failed: CAUSE" -- also operations waiting for a live member (the dead one
//    need not be the direct source) and operations started later. A failed collective breaks
//    the communicator (broken(), communicator.h); groups without the dead member keep working.
//  - membership edited in place: Reconfigure(members, epoch) renumbers the survivors (and
//    admits joiners), bumps the epoch and keeps every connection.
//
// Groups, ranks and epochs: a communicator is an ordered list of world ids (`members`; rank i
// is members[i], world_ranks() == members) at an epoch. Its group key -- a 64-bit hash of the
// group id given at creation and the member list (a sub-communicator's: of its parent's key and
// its own members) -- and the epoch tag every frame, so traffic of different groups or epochs
// never mixes. Frames of an older epoch are dropped; frames of a newer one wait until this
// process reconfigures to it. Two live communicators of one world with the same members need
// different group ids. World ids never repeat: a replacement process gets a new one. Sub() is
// local (no messages, never times out): frames for a sub-communicator that a member has not
// created yet wait for it. A member that closes its AmWorld cleanly (goodbye) has left, which is
// not a failure: a receive from it with no data fails with Unavailable "... left".
//
// Reconfigure(members, epoch) is local (no messages): the caller must be a member, the epoch
// must be newer than the current one (FailedPrecondition naming both otherwise), no member may
// be known dead (Unavailable naming it: a death during a recovery, waited out like any other). It
// renumbers, clears broken(), destroys the cached sub-communicators (pointers from Sub() dangle;
// call Sub() again), drops queued frames of older epochs and resets the collective sequence. Every
// surviving member calls it with the same list and epoch (the coordinator decides them); a joiner
// calls AmWorld::Join, then creates its communicator with that list and epoch. A member that
// reconfigures first may send at once; its frames wait for the others.
//
// Baselines (for the comm-bench, which times in place vs. partial vs. full):
//  - RebuildPartial: AmWorld::Reconnect to every member kept from the old group (close and
//    re-open each connection over the transport), wait for joiners' connections, Reconfigure.
//  - RebuildFull: AmWorld::ReplaceTransport (drop every connection; `fresh`, not yet
//    listening, listens on the same host), `exchange` the new address for the new address book
//    (the caller's channel, e.g. the coordinator; it must return only once every member has
//    published, i.e. it is a barrier), destroy the old transport, ConnectMesh over `members`,
//    Reconfigure. Other communicators of this world lose their connections too; only
//    `members` are reconnected.
//  Both are collective over the members (each must call the same one) and must run while no
//  other traffic flows on the world.
//
// Algorithms (every send is eager: ISend hands the data to the transport, which no longer needs
// the buffer when it returns, so the request is complete at once, and the receiver buffers a
// frame that comes before its receive -- there is no flow control): AllToAllV / AllGather(V) /
// Broadcast send each block directly to its destination and receive straight into the caller's
// buffer; AllReduceSum and ReduceScatter(V) send block j to rank j, rank j sums the n contributions
// in rank order (bf16 in fp32 rounded once, i64 exactly with wrap-around, f32/f64 in their type),
// and AllReduceSum then all-gathers the reduced blocks, so every rank gets identical bits (an
// AllReduceSum of at most 4 KiB instead goes through rank 0, which sums in the same rank order
// and sends the result back: 2 (n - 1) messages instead of 2 n (n - 1), the same bits); Barrier
// is a dissemination barrier (ceil(log2 n) rounds). Frames carry the operation kind, dtype and
// element count: a receiver that gets a different operation, dtype or size returns
// InvalidArgument (not every rank need notice a mismatch; like MPI, mismatches may hang).
//
// Errors: InvalidArgument (arguments, mismatches, a p2p message longer than the buffer);
// Unavailable (a member failed or left, with the world's words); DeadlineExceeded after the op
// timeout (a collective, a Request::Wait, a send to a member that never connected);
// FailedPrecondition on a broken communicator and for a stale epoch. Abort(status) logs and
// terminates THIS process with exit code 1 (it cannot kill the others; their communicators see
// it die).
//
// Thread-safety: a communicator (and its subs) is used by one thread at a time; several
// communicators of one world may be used from different threads. The world's progress thread
// (the transport's) delivers frames. Requests hold the world alive but must not outlive their
// communicator.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "comm/am_world.h"
#include "comm/communicator.h"

namespace tessera::comm {

class AmCommunicator final : public Communicator {
 public:
  // The communicator of `members` (world ids, distinct, including world->world_id()) at
  // `epoch`. No messages: peers need not have created theirs yet. InvalidArgument for a bad
  // member list, Unavailable for a known-dead member, FailedPrecondition for an epoch this world
  // moved past.
  static StatusOr<std::unique_ptr<AmCommunicator>> Create(std::shared_ptr<AmWorld> world,
                                                          std::vector<int> members, uint64_t epoch,
                                                          uint64_t group_id = 0);
  ~AmCommunicator() override;

  uint64_t epoch() const { return epoch_; }
  uint64_t group_key() const { return key_; }
  AmWorld& world() const { return *world_; }

  // In place: see the header comment.
  Status Reconfigure(std::vector<int> members, uint64_t epoch);
  // Baselines: see the header comment. timeout_s bounds the connection phase.
  Status RebuildPartial(std::vector<int> members, uint64_t epoch, double timeout_s);
  // Given this process's new address, returns the new address book (world id -> address) of
  // at least every member, once every member has published its own (a barrier).
  using AddressExchange = std::function<StatusOr<AmAddressBook>(const std::string& new_address)>;
  Status RebuildFull(std::unique_ptr<AmTransport> fresh, const AddressExchange& exchange,
                     std::vector<int> members, uint64_t epoch, double timeout_s);

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
  friend class AmCollective;
  AmCommunicator(std::shared_ptr<AmWorld> world, uint64_t lineage, uint64_t key, uint64_t epoch,
                 int rank, std::vector<int> members);
  // "OP (rank R of N, epoch E)": the prefix of this communicator's error messages.
  std::string Describe(const char* op) const;
  // Checks a new member list and epoch (Reconfigure's rules); returns this process's rank in it.
  StatusOr<int> CheckReconfigure(const std::vector<int>& members, uint64_t epoch) const;
  template <typename T, typename A>
  Status ReduceScatterTyped(ConstBuffer send, MutableBuffer recv,
                            std::span<const int64_t> recv_counts);
  template <typename T, typename A>
  Status AllReduceTyped(MutableBuffer data);

  std::shared_ptr<AmWorld> world_;
  uint64_t lineage_;  // from the group id (root) or the parent's key (sub)
  uint64_t key_;
  uint64_t epoch_;
  uint64_t next_sequence_ = 0;  // collectives started at this epoch
};

}  // namespace tessera::comm
