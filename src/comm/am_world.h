// AmWorld: this process's place in an elastic set of processes connected by one AmTransport
// (am_transport.h) -- the connections, the failure state and the mailbox under AmCommunicator
// (am_communicator.h). One AmWorld per process (tests run several in one process, one per
// thread, each with its own transport).
//
// Identity: every process has a world id (an int >= 0, never reused for another process) and
// an address book world id -> "host:port" (the address its transport listens on). The world
// owns its transport and makes it listen itself, after installing its handlers, so that no
// hello of a fast peer arrives before the world can take it; address() is the transport's.
//
// Connections (full mesh, one connection per pair):
//  - ConnectMesh(members): this process connects to every member with a LOWER world id and
//    waits until every member with a higher id has connected to it. Called by every member.
//  - Join(existing): a newcomer connects to each existing member; they only accept.
//  Every connection starts with a hello message carrying the connector's world id, its address
//  and a connection generation, so the accepting side maps the transport's PeerId to a world
//  id. Sending to a world id that has not connected yet waits for it (bounded by the op
//  deadline); the world never connects lazily, so a pair never has two connections.
//
// Failures: a world id is dead once the transport reports its connection failed (a killed
// process, a closed endpoint) or once the caller injects MarkDead(world_id, reason) -- the
// coordinator does that for peers a heartbeat found hung (e.g. SIGSTOPped). Death is permanent
// (world ids are never reused); frames from a dead world id are dropped. Every waiter whose
// group contains a dead member is woken at once and fails with Unavailable
// "world rank 5 (127.0.0.1:PORT) failed: <cause>". A process that destroys its AmWorld says
// goodbye first and waits (bounded) for the acknowledgements: its peers record that it left (a
// receive from it that has no data fails with Unavailable "... left"), which is not a death:
// groups it belonged to keep working.
//
// Mailbox: data frames carry (group key, epoch, source world id, channel) -- the mailbox key --
// plus the frame kind, dtype and element count. Frames with the same key are matched to
// receives in FIFO order on both sides (the transport keeps per-pair send order); a frame that
// arrives before its receive is posted is copied and queued, a posted receive is filled
// directly by the progress thread. Epochs: each live communicator registers its (group key,
// epoch). A frame whose epoch is older than the registered epoch of its group, or than an
// epoch this world has moved past for that group (Rekey / Unregister), is dropped and counted
// as stale; a frame of a newer epoch is kept until a local communicator reaches that epoch.
//
// Rebuild baselines (for comparison with the in-place AmCommunicator::Reconfigure):
// Reconnect(peers) closes and re-opens the connection to each peer (the higher world id
// reconnects, the lower one waits for the new hello); ReplaceTransport(fresh) says goodbye on
// every connection, retires the transport and installs a fresh one listening on the same host
// (the caller then publishes the new address, drops the retired transport once every member has
// replaced its own, and calls ConnectMesh again).
//
// Thread-safety: the mailbox and failure methods (SendFrame, Post, Wait, Poll, Cancel,
// MarkDead, queries) are thread-safe; the transport's progress thread delivers frames, hellos
// and failures. ConnectMesh, Join, Reconnect, ReplaceTransport, KillForTest and the destructor
// must not run concurrently with any other use of this world (call them while its
// communicators are quiet). Same build on every process: the frame header is sent as raw bytes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "comm/am_transport.h"
#include "comm/dtype.h"
#include "core/status.h"

namespace tessera::comm {

using core::Status;
using core::StatusOr;

using AmAddressBook = std::map<int, std::string>;  // world id -> "host:port"

// What a data frame carries: point-to-point data, or one collective's messages.
enum class AmFrameKind : uint8_t {
  kP2p = 0,
  kAllToAllV,
  kAllGatherV,
  kAllGather,
  kAllReduceSum,
  kReduceScatterV,
  kBroadcast,
  kBarrier,
};
const char* AmFrameKindName(AmFrameKind kind);

// The header of a data frame (sent as raw bytes; the payload is `count` elements of `dtype`).
struct AmFrameHeader {
  static constexpr uint32_t kMagic = 0x414d4346;  // "AMCF"
  uint32_t magic = kMagic;
  AmFrameKind kind = AmFrameKind::kP2p;
  DType dtype = DType::kF32;
  int32_t src = 0;       // sender's world id
  uint64_t group = 0;    // group key (AmCommunicator::group_key)
  uint64_t epoch = 0;    // the sender's epoch of that group
  uint64_t channel = 0;  // a p2p tag, or a collective's sequence number and phase
  int64_t count = 0;     // elements of dtype in the payload
};

// The mailbox key of a frame or a receive.
struct AmMailKey {
  uint64_t group = 0;
  uint64_t epoch = 0;
  int src = 0;
  uint64_t channel = 0;
  auto operator<=>(const AmMailKey&) const = default;
};

// A posted receive: filled by the progress thread (or at once from a queued frame). Fields
// other than the spec are guarded by the world's mutex.
struct AmRecvSlot {
  AmMailKey key;
  AmFrameKind kind = AmFrameKind::kP2p;  // the frame must be of this kind ...
  DType dtype = DType::kF32;             // ... and this dtype
  void* data = nullptr;
  int64_t capacity = 0;  // elements
  bool exact = false;    // the frame must have exactly `capacity` elements (else: at most)
  bool done = false;
  Status status;         // of a completed receive: OK, or why the frame did not fit
  int64_t received = 0;  // elements written
};

class AmWorld {
 public:
  using Clock = std::chrono::steady_clock;
  struct Stats {
    uint64_t frames_delivered = 0;      // data frames that reached a receive or the queue
    uint64_t frames_dropped_stale = 0;  // an epoch older than the group's (also purged ones)
    uint64_t frames_dropped_dead = 0;   // from a dead world id
    uint64_t frames_dropped_bad = 0;    // malformed, or from a connection without a hello
  };

  // Takes `transport` (not listening yet), installs the world's handlers, then listens on
  // host:port (port 0: any free one; address() tells which). world_id >= 0. `book` may be
  // partial: complete it with SetAddress before ConnectMesh (peers also learn the addresses of
  // those who connect from their hellos). InvalidArgument for a bad id or a transport that
  // already listens; the transport's error when Listen fails.
  static StatusOr<std::shared_ptr<AmWorld>> Create(std::unique_ptr<AmTransport> transport,
                                                   int world_id, const std::string& host, int port,
                                                   AmAddressBook book = {});
  // Says goodbye to every connected peer and waits (at most 5 s) until each has acknowledged
  // it, so that no peer mistakes the closing connections for a death; then destroys the
  // transport (bounded, see am_transport.h).
  ~AmWorld();
  AmWorld(const AmWorld&) = delete;
  AmWorld& operator=(const AmWorld&) = delete;

  int world_id() const { return world_id_; }
  std::string address() const;
  std::string backend_name() const { return backend_; }
  AmAddressBook address_book() const;
  // Adds or replaces the address of `world_id` (e.g. a joiner's, or after a rebuild).
  void SetAddress(int world_id, const std::string& address);

  // ---- Connections (see the header comment) -----------------------------------------------
  // Connects to every member with a lower id and waits for every member with a higher id, all
  // within timeout_s. Members already connected are skipped. Unavailable naming the member
  // (and address) that could not be reached, DeadlineExceeded naming who did not connect,
  // InvalidArgument when a lower member has no address.
  Status ConnectMesh(const std::vector<int>& members, double timeout_s);
  // Connects to each of `existing` (not yet connected); they need not call anything.
  Status Join(const std::vector<int>& existing, double timeout_s);
  // Waits until each of `peers` has a connection (or is dead: Unavailable).
  Status WaitForPeers(const std::vector<int>& peers, double timeout_s);
  bool connected(int world_id) const;

  // ---- Failures ------------------------------------------------------------------------------
  // Marks `world_id` dead with `reason` (a hung peer found by a heartbeat) and wakes every
  // waiter of a group containing it. Idempotent (the first reason is kept). Frames it sends
  // later are dropped; the connection is left open (closing could block on a stopped peer).
  void MarkDead(int world_id, const std::string& reason);
  // Fails, with Unavailable "epoch E fenced: REASON", every receive of an epoch older than
  // `epoch` (posted or to come) and every send of such an epoch, and wakes their waiters. The
  // coordinator's abort of epoch E does this on every survivor, so no process keeps waiting on
  // a peer that has moved on to the recovery (which communicates at epoch E or later).
  // Monotonic: an older epoch than the current fence is ignored.
  void FenceEpochsBefore(uint64_t epoch, const std::string& reason);
  bool IsDead(int world_id) const;
  std::map<int, std::string> dead() const;  // world id -> cause
  // OK, or Unavailable "world rank W (ADDRESS) failed: CAUSE" for the first dead member.
  Status CheckMembers(std::span<const int> members) const;
  Stats stats() const;

  // ---- Rebuild baselines ----------------------------------------------------------------------
  // Closes and re-opens the connection to each of `peers` (all must call it with each other,
  // the same number of times): the higher id sends goodbye on the old connection, closes it and
  // connects anew; the lower id waits for the new hello. Within timeout_s.
  Status Reconnect(const std::vector<int>& peers, double timeout_s);
  // Makes `fresh` (not listening yet) listen on this world's host (any port), says goodbye on
  // every connection and installs `fresh`; its address becomes this world's. The old transport
  // is retired: its events are ignored (a failure of an old connection is no death) but it
  // stays up, so that its peers see no failure either, until DropRetiredTransport -- call that
  // once every member has replaced its transport (after the address exchange, a barrier), so
  // that a member that has not got that far never sees an old connection drop. Dead world ids
  // stay dead; every other connection is gone, so call ConnectMesh (with the new address book)
  // next. On an error the old transport is kept.
  Status ReplaceTransport(std::unique_ptr<AmTransport> fresh);
  // Destroys the transport ReplaceTransport retired (if any).
  void DropRetiredTransport();

  // For tests: destroys the transport WITHOUT the goodbye, as if the process had been killed;
  // its peers see a failure. This world is unusable afterwards (sends fail with Unavailable).
  void KillForTest();

  // ---- The mailbox (AmCommunicator's side) -----------------------------------------------
  // Waits are bounded by a deadline; Clock::time_point::max() waits forever.
  static Clock::time_point DeadlineAfter(double timeout_s);

  // Registers a live communicator's (group, epoch): FailedPrecondition when this world has
  // already moved past that epoch of the group, InvalidArgument when another live communicator
  // has the same group key. Drops queued frames of older epochs of the group.
  Status Register(uint64_t group, uint64_t epoch);
  // Unregisters it: later frames of that epoch (or older) are stale.
  void Unregister(uint64_t group, uint64_t epoch);
  // Unregister(old) then Register(new), atomically (on error nothing changes).
  Status Rekey(uint64_t old_group, uint64_t old_epoch, uint64_t group, uint64_t epoch);

  // Sends a data frame to world id `dst` (to itself: straight into the mailbox). Waits for the
  // connection if `dst` has not connected yet. Unavailable when dst is dead or left (the
  // world's words), DeadlineExceeded when no connection came before `deadline`.
  Status SendFrame(int dst, const AmFrameHeader& header, std::span<const std::byte> payload,
                   Clock::time_point deadline);
  // Posts a receive; it may complete at once from a queued frame.
  std::shared_ptr<AmRecvSlot> Post(AmRecvSlot spec);
  // Waits for the receive: its status once done; Unavailable as soon as a member of `group`
  // (world ids) is dead or the source left without sending it; DeadlineExceeded "not complete"
  // after the deadline (the receive stays posted).
  Status Wait(AmRecvSlot& slot, std::span<const int> group, Clock::time_point deadline);
  // The same without blocking: true once complete (its status as the error if it failed).
  StatusOr<bool> Poll(AmRecvSlot& slot, std::span<const int> group);
  // Withdraws a posted receive that has not completed (nothing happens if it has).
  void Cancel(const std::shared_ptr<AmRecvSlot>& slot);

 private:
  struct QueuedFrame {
    AmFrameHeader header;
    std::vector<std::byte> payload;
  };
  struct Mailbox {
    std::deque<QueuedFrame> frames;
    std::deque<std::shared_ptr<AmRecvSlot>> posted;  // never both non-empty
  };
  struct Link {
    int world = -1;  // -1 until its hello arrived
    uint64_t transport_generation = 0;
  };

  AmWorld(std::unique_ptr<AmTransport> transport, int world_id, std::string host,
          AmAddressBook book);
  void InstallHandlers(AmTransport& transport, uint64_t generation);
  void OnFrame(uint64_t generation, PeerId peer, std::span<const std::byte> header,
               std::span<const std::byte> payload);
  void OnFailure(uint64_t generation, PeerId peer, const Status& why);
  Status SendHello(AmTransport& transport, PeerId peer, uint64_t connection_generation);
  size_t SendByes(uint8_t why);  // returns how many were sent
  StatusOr<PeerId> ConnectTo(int world, uint64_t connection_generation, Clock::time_point deadline);

  // Locked helpers (mu_ held).
  void MarkDeadLocked(int world, const std::string& cause);
  std::string FailureTextLocked(int world) const;
  std::string AddressLocked(int world) const;
  bool StaleLocked(uint64_t group, uint64_t epoch) const;
  void PurgeLocked(uint64_t group);
  void DeliverLocked(const AmFrameHeader& header, std::span<const std::byte> payload);
  void FillLocked(AmRecvSlot& slot, const AmFrameHeader& header,
                  std::span<const std::byte> payload);
  // OK, or why a waiter on `slot` (group `group`) must give up now.
  Status GiveUpLocked(const AmRecvSlot& slot, std::span<const int> group) const;
  template <typename Pred>
  bool WaitLocked(std::unique_lock<std::mutex>& lock, Clock::time_point deadline, Pred pred);

  const int world_id_;
  const std::string backend_;
  const std::string host_;                  // where the transports listen
  std::unique_ptr<AmTransport> transport_;  // replaced only by ReplaceTransport / KillForTest
  std::unique_ptr<AmTransport> retired_;    // ReplaceTransport's old one, until dropped

  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t transport_generation_ = 1;  // events of older transports are ignored
  AmAddressBook book_;
  uint64_t fence_epoch_ = 0;  // FenceEpochsBefore
  std::string fence_reason_;
  std::map<PeerId, Link> links_;                   // connections of the current transport
  std::map<int, PeerId> peer_of_;                  // world id -> its current connection
  std::map<int, uint64_t> hello_gen_;              // world id -> highest connection generation seen
  std::map<int, uint64_t> reconnects_;             // world id -> Reconnect rounds with it
  std::map<int, std::string> dead_;                // world id -> cause
  std::map<int, std::string> left_;                // world id -> why (graceful goodbye)
  std::map<PeerId, std::string> failed_unlinked_;  // failures of connections not yet recorded
  std::map<AmMailKey, Mailbox> mail_;
  std::map<uint64_t, uint64_t> live_;   // group -> epoch of its live communicator
  std::map<uint64_t, uint64_t> floor_;  // group -> lowest epoch still accepted
  size_t leave_acks_ = 0;               // acknowledgements of this world's leaving goodbye
  Stats stats_;
};

}  // namespace tessera::comm
