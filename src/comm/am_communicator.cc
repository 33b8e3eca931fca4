#include "comm/am_communicator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <type_traits>
#include <utility>

namespace tessera::comm {

namespace {

// AllReduceSum of at most this many bytes goes through rank 0 (fewer messages); larger ones use
// the blocked reduce-scatter + all-gather (less data per rank).
constexpr int64_t kSmallAllReduceBytes = 4096;

constexpr uint64_t kRootSalt = 0x616d636f6d6d0001ULL;
constexpr uint64_t kSubSalt = 0x616d636f6d6d0002ULL;
constexpr uint64_t kCollectiveChannel = uint64_t{1} << 63;  // p2p channels are tags < 2^15

uint64_t Mix(uint64_t h, uint64_t v) {
  uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t GroupKey(uint64_t lineage, const std::vector<int>& members) {
  uint64_t h = Mix(lineage, members.size());
  for (int m : members) h = Mix(h, static_cast<uint64_t>(static_cast<uint32_t>(m)));
  return h;
}

// The rank of `world.world_id()` in `members`, after checking the list.
StatusOr<int> RankIn(const char* what, const AmWorld& world, const std::vector<int>& members) {
  if (members.empty()) {
    return core::InvalidArgument(fmt::format("{} members: got an empty list", what));
  }
  std::set<int> seen;
  int rank = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    const int m = members[i];
    if (m < 0) {
      return core::InvalidArgument(
          fmt::format("{} members: world id {} at position {} is negative", what, m, i));
    }
    if (!seen.insert(m).second) {
      return core::InvalidArgument(fmt::format("{} members: world id {} appears twice in [{}]",
                                               what, m, fmt::join(members, ", ")));
    }
    if (m == world.world_id()) rank = static_cast<int>(i);
  }
  if (rank < 0) {
    return core::InvalidArgument(
        fmt::format("{} members: this process (world id {}) is not in [{}]; only members create "
                    "or reconfigure a group",
                    what, world.world_id(), fmt::join(members, ", ")));
  }
  const Status alive = world.CheckMembers(members);
  if (!alive.ok()) {
    // A death, not a caller's mistake: a recovery waits for the next member list.
    return core::Unavailable(fmt::format("{} members: {}; leave it out", what, alive.message()));
  }
  return rank;
}

Status Prefixed(const std::string& prefix, const Status& s) {
  return s.ok() ? s : Status(s.code(), prefix + ": " + s.message());
}

template <typename A, typename T>
A Widen(T v) {
  if constexpr (std::is_same_v<T, Bf16>) {
    return Bf16ToFloat(v);
  } else {
    return static_cast<A>(v);
  }
}

template <typename T, typename A>
T Narrow(A v) {
  if constexpr (std::is_same_v<T, Bf16>) {
    return FloatToBf16(v);
  } else {
    return static_cast<T>(v);
  }
}

// Block c of a buffer of `len` elements split into n near-equal contiguous blocks.
std::pair<int64_t, int64_t> EvenBlock(int64_t len, int n, int c) {
  const int64_t begin = len * c / n;
  return {begin, len * (c + 1) / n - begin};
}

class AmSentRequest final : public RequestImpl {
 public:
  StatusOr<bool> Test() override { return true; }
  Status Wait(double) override { return Status::Ok(); }
  void Cancel() override {}
};

class AmRecvRequest final : public RequestImpl {
 public:
  AmRecvRequest(std::shared_ptr<AmWorld> world, std::shared_ptr<AmRecvSlot> slot,
                std::vector<int> group, std::string what)
      : world_(std::move(world)),
        slot_(std::move(slot)),
        group_(std::move(group)),
        what_(std::move(what)) {}

  StatusOr<bool> Test() override {
    StatusOr<bool> done = world_->Poll(*slot_, group_);
    if (!done.ok()) return Prefixed(what_, done.status());
    return *done;
  }

  Status Wait(double timeout_s) override {
    const Status s = world_->Wait(*slot_, group_, AmWorld::DeadlineAfter(timeout_s));
    if (s.code() == core::StatusCode::kDeadlineExceeded) {
      return core::DeadlineExceeded(fmt::format("{}: not complete after {} s", what_, timeout_s));
    }
    return Prefixed(what_, s);
  }

  void Cancel() override { world_->Cancel(slot_); }

 private:
  std::shared_ptr<AmWorld> world_;
  std::shared_ptr<AmRecvSlot> slot_;
  std::vector<int> group_;  // world ids: a dead one fails the receive
  std::string what_;
};

}  // namespace

// The messages of one collective: sends, posted receives (cancelled if the collective ends
// early) and waits with the collective's deadline.
class AmCollective {
 public:
  AmCollective(AmCommunicator& comm, AmFrameKind kind)
      : comm_(comm),
        kind_(kind),
        sequence_(comm.next_sequence_++),
        deadline_(AmWorld::DeadlineAfter(comm.op_timeout_s())) {}
  ~AmCollective() {
    for (const Posted& p : posted_) comm_.world_->Cancel(p.slot);
  }
  AmCollective(const AmCollective&) = delete;
  AmCollective& operator=(const AmCollective&) = delete;

  // Unavailable when a member is already known dead.
  Status Start() { return Error(comm_.world_->CheckMembers(comm_.world_ranks())); }

  Status Send(int dst, int phase, DType dtype, const void* data, int64_t count) {
    AmFrameHeader h;
    h.kind = kind_;
    h.dtype = dtype;
    h.src = comm_.world_rank();
    h.group = comm_.key_;
    h.epoch = comm_.epoch_;
    h.channel = Channel(phase);
    h.count = count;
    const auto bytes = std::span<const std::byte>(static_cast<const std::byte*>(data),
                                                  static_cast<size_t>(count * DTypeSize(dtype)));
    return Error(comm_.world_->SendFrame(comm_.world_ranks()[dst], h, bytes, deadline_));
  }

  // Posts a receive of exactly `count` elements from rank `src`; returns its index for Wait.
  size_t Post(int src, int phase, DType dtype, void* data, int64_t count) {
    AmRecvSlot spec;
    spec.key = AmMailKey{comm_.key_, comm_.epoch_, comm_.world_ranks()[src], Channel(phase)};
    spec.kind = kind_;
    spec.dtype = dtype;
    spec.data = data;
    spec.capacity = count;
    spec.exact = true;
    posted_.push_back(Posted{src, comm_.world_->Post(spec)});
    return posted_.size() - 1;
  }

  // Waits for the posted receives [begin, end), in order; stops at the first error.
  Status Wait(size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const Posted& p = posted_[i];
      const Status s = comm_.world_->Wait(*p.slot, comm_.world_ranks(), deadline_);
      if (s.code() == core::StatusCode::kDeadlineExceeded) {
        return core::DeadlineExceeded(
            fmt::format("{}: not complete after {} s: no message from rank {} (world rank {})",
                        comm_.Describe(AmFrameKindName(kind_)), comm_.op_timeout_s(), p.src,
                        comm_.world_ranks()[p.src]));
      }
      RETURN_IF_ERROR(Error(s));
    }
    return Status::Ok();
  }
  Status WaitAll() { return Wait(0, posted_.size()); }

  Status Error(const Status& s) const {
    return Prefixed(comm_.Describe(AmFrameKindName(kind_)), s);
  }

 private:
  struct Posted {
    int src;
    std::shared_ptr<AmRecvSlot> slot;
  };
  uint64_t Channel(int phase) const {
    return kCollectiveChannel | (sequence_ << 8) | static_cast<uint64_t>(phase & 0xff);
  }

  AmCommunicator& comm_;
  AmFrameKind kind_;
  uint64_t sequence_;
  AmWorld::Clock::time_point deadline_;
  std::vector<Posted> posted_;
};

// ---- Creation, membership ----------------------------------------------------------------------

StatusOr<std::unique_ptr<AmCommunicator>> AmCommunicator::Create(std::shared_ptr<AmWorld> world,
                                                                 std::vector<int> members,
                                                                 uint64_t epoch,
                                                                 uint64_t group_id) {
  if (world == nullptr) return core::InvalidArgument("AmCommunicator: world: got null");
  ASSIGN_OR_RETURN(int rank, RankIn("AmCommunicator", *world, members));
  const uint64_t lineage = Mix(kRootSalt, group_id);
  const uint64_t key = GroupKey(lineage, members);
  RETURN_IF_ERROR(world->Register(key, epoch).WithPrefix("AmCommunicator"));
  return std::unique_ptr<AmCommunicator>(
      new AmCommunicator(std::move(world), lineage, key, epoch, rank, std::move(members)));
}

AmCommunicator::AmCommunicator(std::shared_ptr<AmWorld> world, uint64_t lineage, uint64_t key,
                               uint64_t epoch, int rank, std::vector<int> members)
    : Communicator(rank, std::move(members)),
      world_(std::move(world)),
      lineage_(lineage),
      key_(key),
      epoch_(epoch) {}

AmCommunicator::~AmCommunicator() { world_->Unregister(key_, epoch_); }

std::string AmCommunicator::Describe(const char* op) const {
  return fmt::format("{} (rank {} of {}, epoch {})", op, rank(), size(), epoch_);
}

StatusOr<int> AmCommunicator::CheckReconfigure(const std::vector<int>& members,
                                               uint64_t epoch) const {
  if (epoch <= epoch_) {
    return core::FailedPrecondition(fmt::format(
        "Reconfigure: epoch {} is not newer than the current epoch {} of this group (world rank "
        "{}); epochs must increase",
        epoch, epoch_, world_->world_id()));
  }
  return RankIn("Reconfigure", *world_, members);
}

Status AmCommunicator::Reconfigure(std::vector<int> members, uint64_t epoch) {
  ASSIGN_OR_RETURN(int rank, CheckReconfigure(members, epoch));
  const uint64_t key = GroupKey(lineage_, members);
  RETURN_IF_ERROR(world_->Rekey(key_, epoch_, key, epoch).WithPrefix("Reconfigure"));
  ResetMembership(rank, std::move(members));  // also destroys the subs (they unregister)
  key_ = key;
  epoch_ = epoch;
  next_sequence_ = 0;
  return Status::Ok();
}

Status AmCommunicator::RebuildPartial(std::vector<int> members, uint64_t epoch, double timeout_s) {
  ASSIGN_OR_RETURN(int rank, CheckReconfigure(members, epoch));
  (void)rank;
  const std::set<int> old(world_ranks().begin(), world_ranks().end());
  std::vector<int> kept, joiners;
  for (int m : members) {
    if (m == world_->world_id()) continue;
    (old.count(m) ? kept : joiners).push_back(m);
  }
  RETURN_IF_ERROR(world_->Reconnect(kept, timeout_s).WithPrefix("RebuildPartial"));
  RETURN_IF_ERROR(world_->WaitForPeers(joiners, timeout_s).WithPrefix("RebuildPartial"));
  return Reconfigure(std::move(members), epoch);
}

Status AmCommunicator::RebuildFull(std::unique_ptr<AmTransport> fresh,
                                   const AddressExchange& exchange, std::vector<int> members,
                                   uint64_t epoch, double timeout_s) {
  ASSIGN_OR_RETURN(int rank, CheckReconfigure(members, epoch));
  (void)rank;
  RETURN_IF_ERROR(world_->ReplaceTransport(std::move(fresh)).WithPrefix("RebuildFull"));
  StatusOr<AmAddressBook> book = exchange(world_->address());
  if (!book.ok()) return book.status().WithPrefix("RebuildFull: address exchange");
  for (const auto& [id, address] : *book) {
    if (id != world_->world_id()) world_->SetAddress(id, address);
  }
  // Every member has replaced its transport (the exchange is a barrier): closing the old
  // connections now cannot look like a death to anyone.
  world_->DropRetiredTransport();
  RETURN_IF_ERROR(world_->ConnectMesh(members, timeout_s).WithPrefix("RebuildFull"));
  return Reconfigure(std::move(members), epoch);
}

[[noreturn]] void AmCommunicator::Abort(const Status& status) {
  const std::string line = fmt::format("tessera am communicator: world rank {} aborts: {}\n",
                                       world_->world_id(), status.ToString());
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  _exit(1);
}

StatusOr<std::unique_ptr<Communicator>> AmCommunicator::DoSub(const std::vector<int>& ranks) {
  std::vector<int> members;
  int index = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    members.push_back(world_ranks()[ranks[i]]);
    if (ranks[i] == rank()) index = static_cast<int>(i);
  }
  const uint64_t lineage = Mix(key_, kSubSalt);
  const uint64_t key = GroupKey(lineage, members);
  RETURN_IF_ERROR(world_->Register(key, epoch_).WithPrefix(Describe("Sub")));
  return std::unique_ptr<Communicator>(
      new AmCommunicator(world_, lineage, key, epoch_, index, std::move(members)));
}

// ---- Point-to-point
// ------------------------------------------------------------------------------

StatusOr<std::unique_ptr<RequestImpl>> AmCommunicator::DoISend(std::span<const float> data, int dst,
                                                               int tag) {
  const std::string what = Describe(fmt::format("ISend to rank {} tag {}", dst, tag).c_str());
  RETURN_IF_ERROR(Prefixed(what, world_->CheckMembers(world_ranks())));
  AmFrameHeader h;
  h.kind = AmFrameKind::kP2p;
  h.dtype = DType::kF32;
  h.src = world_rank();
  h.group = key_;
  h.epoch = epoch_;
  h.channel = static_cast<uint64_t>(tag);
  h.count = static_cast<int64_t>(data.size());
  RETURN_IF_ERROR(Prefixed(what, world_->SendFrame(world_ranks()[dst], h, std::as_bytes(data),
                                                   AmWorld::DeadlineAfter(op_timeout_s()))));
  return std::unique_ptr<RequestImpl>(std::make_unique<AmSentRequest>());
}

StatusOr<std::unique_ptr<RequestImpl>> AmCommunicator::DoIRecv(std::span<float> data, int src,
                                                               int tag) {
  std::string what = Describe(fmt::format("IRecv from rank {} tag {}", src, tag).c_str());
  RETURN_IF_ERROR(Prefixed(what, world_->CheckMembers(world_ranks())));
  AmRecvSlot spec;
  spec.key = AmMailKey{key_, epoch_, world_ranks()[src], static_cast<uint64_t>(tag)};
  spec.kind = AmFrameKind::kP2p;
  spec.dtype = DType::kF32;
  spec.data = data.data();
  spec.capacity = static_cast<int64_t>(data.size());
  spec.exact = false;
  return std::unique_ptr<RequestImpl>(
      std::make_unique<AmRecvRequest>(world_, world_->Post(spec), world_ranks(), std::move(what)));
}

// ---- Collectives
// ----------------------------------------------------------------------------------

Status AmCommunicator::DoAllToAllV(ConstBuffer send, std::span<const int64_t> send_counts,
                                   std::span<const int64_t> send_displs, MutableBuffer recv,
                                   std::span<const int64_t> recv_counts,
                                   std::span<const int64_t> recv_displs) {
  AmCollective op(*this, AmFrameKind::kAllToAllV);
  RETURN_IF_ERROR(op.Start());
  const int n = size();
  const int r = rank();
  const int64_t elem = DTypeSize(send.dtype);
  const auto* in = static_cast<const std::byte*>(send.data);
  auto* out = static_cast<std::byte*>(recv.data);
  for (int j = 0; j < n; ++j) {
    if (j != r) op.Post(j, 0, recv.dtype, out + recv_displs[j] * elem, recv_counts[j]);
  }
  for (int s = 1; s < n; ++s) {
    const int j = (r + s) % n;
    RETURN_IF_ERROR(op.Send(j, 0, send.dtype, in + send_displs[j] * elem, send_counts[j]));
  }
  Status own;
  if (send_counts[r] != recv_counts[r]) {
    own = op.Error(core::InvalidArgument(fmt::format(
        "rank {} sends {} elements to itself but expects {}", r, send_counts[r], recv_counts[r])));
  } else if (send_counts[r] > 0) {
    std::memcpy(out + recv_displs[r] * elem, in + send_displs[r] * elem,
                static_cast<size_t>(send_counts[r] * elem));
  }
  RETURN_IF_ERROR(op.WaitAll());
  return own;
}

Status AmCommunicator::DoAllGatherV(ConstBuffer send, MutableBuffer recv,
                                    std::span<const int64_t> recv_counts,
                                    std::span<const int64_t> recv_displs) {
  AmCollective op(*this, AmFrameKind::kAllGatherV);
  RETURN_IF_ERROR(op.Start());
  const int n = size();
  const int r = rank();
  const int64_t elem = DTypeSize(send.dtype);
  auto* out = static_cast<std::byte*>(recv.data);
  for (int j = 0; j < n; ++j) {
    if (j != r) op.Post(j, 0, recv.dtype, out + recv_displs[j] * elem, recv_counts[j]);
  }
  for (int s = 1; s < n; ++s) {
    RETURN_IF_ERROR(op.Send((r + s) % n, 0, send.dtype, send.data, send.count));
  }
  if (send.count > 0) {
    std::memcpy(out + recv_displs[r] * elem, send.data, static_cast<size_t>(send.bytes()));
  }
  return op.WaitAll();
}

Status AmCommunicator::DoAllGather(ConstBuffer send, MutableBuffer recv) {
  AmCollective op(*this, AmFrameKind::kAllGather);
  RETURN_IF_ERROR(op.Start());
  const int n = size();
  const int r = rank();
  auto* out = static_cast<std::byte*>(recv.data);
  const int64_t block = send.bytes();
  for (int j = 0; j < n; ++j) {
    if (j != r) op.Post(j, 0, recv.dtype, out + j * block, send.count);
  }
  for (int s = 1; s < n; ++s) {
    RETURN_IF_ERROR(op.Send((r + s) % n, 0, send.dtype, send.data, send.count));
  }
  if (block > 0) std::memcpy(out + r * block, send.data, static_cast<size_t>(block));
  return op.WaitAll();
}

template <typename T, typename A>
Status AmCommunicator::AllReduceTyped(MutableBuffer data) {
  AmCollective op(*this, AmFrameKind::kAllReduceSum);
  RETURN_IF_ERROR(op.Start());
  const int n = size();
  const int r = rank();
  if (n == 1) return Status::Ok();
  T* d = static_cast<T*>(data.data);
  const int64_t len = data.count;
  if (len * static_cast<int64_t>(sizeof(T)) <= kSmallAllReduceBytes) {
    // A few elements: each rank sends its data to rank 0, which sums in rank order (the order of
    // the blocked path below, so the same bits) and sends the sum back: 2 (n - 1) messages in
    // all instead of 2 n (n - 1), which is what a small sum costs on oversubscribed cores.
    if (r != 0) {
      RETURN_IF_ERROR(op.Send(0, 0, data.dtype, d, len));  // eager: d may be overwritten next
      op.Post(0, 1, data.dtype, d, len);
      return op.WaitAll();
    }
    std::vector<T> incoming(static_cast<size_t>(len * (n - 1)));
    for (int j = 1; j < n; ++j) op.Post(j, 0, data.dtype, incoming.data() + (j - 1) * len, len);
    const Status gathered = op.WaitAll();
    if (!gathered.ok()) {
      // A mismatch (another collective, dtype or size) is answered with an empty frame, so the
      // others fail on its size too instead of waiting; never with a partial sum. A dead member
      // needs no answer: the others see the death themselves.
      if (gathered.code() != core::StatusCode::kUnavailable &&
          gathered.code() != core::StatusCode::kDeadlineExceeded) {
        for (int j = 1; j < n; ++j) (void)op.Send(j, 1, data.dtype, d, 0);
      }
      return gathered;
    }
    std::vector<A> acc(static_cast<size_t>(len), A(0));
    for (int i = 0; i < n; ++i) {
      const T* src = i == 0 ? d : incoming.data() + (i - 1) * len;
      for (int64_t k = 0; k < len; ++k) acc[k] += Widen<A>(src[k]);
    }
    for (int64_t k = 0; k < len; ++k) d[k] = Narrow<T>(acc[k]);
    for (int j = 1; j < n; ++j) RETURN_IF_ERROR(op.Send(j, 1, data.dtype, d, len));
    return Status::Ok();
  }
  const auto [mine_at, mine] = EvenBlock(len, n, r);
  // Phase 0: block j of every rank goes to rank j.
  std::vector<T> incoming(static_cast<size_t>(mine * n));
  for (int j = 0; j < n; ++j) {
    if (j != r) op.Post(j, 0, data.dtype, incoming.data() + j * mine, mine);
  }
  const size_t phase0_end = static_cast<size_t>(n - 1);
  for (int s = 1; s < n; ++s) {
    const int j = (r + s) % n;
    const auto [at, count] = EvenBlock(len, n, j);
    RETURN_IF_ERROR(op.Send(j, 0, data.dtype, d + at, count));
  }
  // Phase 1 receives land in place: block j was sent already (sends are eager).
  for (int j = 0; j < n; ++j) {
    if (j == r) continue;
    const auto [at, count] = EvenBlock(len, n, j);
    op.Post(j, 1, data.dtype, d + at, count);
  }
  RETURN_IF_ERROR(op.Wait(0, phase0_end));
  std::vector<A> acc(static_cast<size_t>(mine), A(0));
  for (int i = 0; i < n; ++i) {  // rank order: the same bits on every rank
    const T* src = i == r ? d + mine_at : incoming.data() + i * mine;
    for (int64_t k = 0; k < mine; ++k) acc[k] += Widen<A>(src[k]);
  }
  for (int64_t k = 0; k < mine; ++k) d[mine_at + k] = Narrow<T>(acc[k]);
  // Phase 1: every rank's reduced block goes to everybody.
  for (int s = 1; s < n; ++s) {
    RETURN_IF_ERROR(op.Send((r + s) % n, 1, data.dtype, d + mine_at, mine));
  }
  return op.WaitAll();
}

Status AmCommunicator::DoAllReduceSum(MutableBuffer data) {
  switch (data.dtype) {
    case DType::kF32:
      return AllReduceTyped<float, float>(data);
    case DType::kBF16:
      return AllReduceTyped<Bf16, float>(data);
    case DType::kI64:
      return AllReduceTyped<int64_t, uint64_t>(data);
    case DType::kF64:
      return AllReduceTyped<double, double>(data);
  }
  return core::Internal("AllReduceSum: unknown dtype");
}

template <typename T, typename A>
Status AmCommunicator::ReduceScatterTyped(ConstBuffer send, MutableBuffer recv,
                                          std::span<const int64_t> recv_counts) {
  AmCollective op(*this, AmFrameKind::kReduceScatterV);
  RETURN_IF_ERROR(op.Start());
  const int n = size();
  const int r = rank();
  const T* in = static_cast<const T*>(send.data);
  std::vector<int64_t> at(n + 1, 0);
  for (int j = 0; j < n; ++j) at[j + 1] = at[j] + recv_counts[j];
  const int64_t mine = recv_counts[r];
  std::vector<T> incoming(static_cast<size_t>(mine * n));
  for (int j = 0; j < n; ++j) {
    if (j != r) op.Post(j, 0, send.dtype, incoming.data() + j * mine, mine);
  }
  for (int s = 1; s < n; ++s) {
    const int j = (r + s) % n;
    RETURN_IF_ERROR(op.Send(j, 0, send.dtype, in + at[j], recv_counts[j]));
  }
  RETURN_IF_ERROR(op.WaitAll());
  std::vector<A> acc(static_cast<size_t>(mine), A(0));
  for (int i = 0; i < n; ++i) {
    const T* src = i == r ? in + at[r] : incoming.data() + i * mine;
    for (int64_t k = 0; k < mine; ++k) acc[k] += Widen<A>(src[k]);
  }
  T* out = static_cast<T*>(recv.data);
  for (int64_t k = 0; k < mine; ++k) out[k] = Narrow<T>(acc[k]);
  return Status::Ok();
}

Status AmCommunicator::DoReduceScatterV(ConstBuffer send, MutableBuffer recv,
                                        std::span<const int64_t> recv_counts) {
  switch (send.dtype) {
    case DType::kF32:
      return ReduceScatterTyped<float, float>(send, recv, recv_counts);
    case DType::kBF16:
      return ReduceScatterTyped<Bf16, float>(send, recv, recv_counts);
    case DType::kI64:
      return ReduceScatterTyped<int64_t, uint64_t>(send, recv, recv_counts);
    case DType::kF64:
      return ReduceScatterTyped<double, double>(send, recv, recv_counts);
  }
  return core::Internal("ReduceScatterV: unknown dtype");
}

Status AmCommunicator::DoBroadcast(MutableBuffer data, int root) {
  AmCollective op(*this, AmFrameKind::kBroadcast);
  RETURN_IF_ERROR(op.Start());
  if (rank() != root) {
    op.Post(root, 0, data.dtype, data.data, data.count);
    return op.WaitAll();
  }
  for (int s = 1; s < size(); ++s) {
    RETURN_IF_ERROR(op.Send((root + s) % size(), 0, data.dtype, data.data, data.count));
  }
  return Status::Ok();
}

Status AmCommunicator::DoBarrier() {
  AmCollective op(*this, AmFrameKind::kBarrier);
  RETURN_IF_ERROR(op.Start());
  const int n = size();
  const int r = rank();
  // Dissemination: in round k every rank signals rank r + 2^k and hears from rank r - 2^k.
  int round = 0;
  for (int step = 1; step < n; step <<= 1, ++round) {
    const size_t index = op.Post((r - step % n + n) % n, round, DType::kF32, nullptr, 0);
    RETURN_IF_ERROR(op.Send((r + step) % n, round, DType::kF32, nullptr, 0));
    RETURN_IF_ERROR(op.Wait(index, index + 1));
  }
  return Status::Ok();
}

}  // namespace tessera::comm
