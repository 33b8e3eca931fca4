#include "comm/link_collectives.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "comm/futex.h"
#include "comm/ring_index.h"
#include "core/check.h"

namespace tessera::comm {

namespace {

constexpr int kMaxSteps = PacedLinks::kMaxEndpoints;
// Window header: signal counters. Slot 0: "a peer finished the previous collective";
// then one data slot per step for each of three directions; then the wake counter that every
// message of a two-direction ring also bumps (Put::wake).
constexpr int kReadySlot = 0;
constexpr int kWakeSlot = 1 + 3 * kMaxSteps;
constexpr int kSlots = 2 + 3 * kMaxSteps;
// Then, from kStampOffset, the arrival time of each chunk message per data slot
// (copy_engine.h's Put::arrival_stamp): every data slot receives the collective's chunk
// count of messages, chunk 0 first, so the receiver's count on the slot since the collective
// began names the chunk.
constexpr int64_t kStampOffset = 4096;
constexpr int64_t kHeaderBytes = kStampOffset + 102400;
static_assert(kSlots * sizeof(std::atomic<uint32_t>) <= kStampOffset);
static_assert(kSlots * kMaxLinkChunks * sizeof(std::atomic<int64_t>) <=
              kHeaderBytes - kStampOffset);

int CwSlot(int step) { return 1 + step; }
int CcwSlot(int step) { return 1 + kMaxSteps + step; }
int DirectSlot(int step) { return 1 + 2 * kMaxSteps + step; }
// Data slot of direction d (0: clockwise, 1: counter-clockwise) at `step`.
int RingSlot(int d, int step) { return d == 0 ? CwSlot(step) : CcwSlot(step); }

// memcpy that accepts empty ranges with null pointers (empty collectives pass them).
void CopyBytes(void* dst, const void* src, int64_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, static_cast<size_t>(bytes));
}

template <typename T>
struct AccOf {
  using type = T;
};
template <>
struct AccOf<Bf16> {
  using type = float;
};

template <typename Acc, typename T>
Acc ToAcc(T v) {
  if constexpr (std::is_same_v<T, Bf16>)
    return Bf16ToFloat(v);
  else
    return static_cast<Acc>(v);
}
template <typename T, typename Acc>
T FromAcc(Acc v) {
  if constexpr (std::is_same_v<T, Bf16>)
    return FloatToBf16(v);
  else
    return static_cast<T>(v);
}

int64_t AccSize(DType t) { return t == DType::kBF16 ? 4 : DTypeSize(t); }

}  // namespace

LinkCollectives::LinkCollectives(Communicator& comm, CopyEngine* engine,
                                 LinkCollectivesOptions options,
                                 std::unique_ptr<SymmetricMemory> memory)
    : comm_(comm),
      engine_(engine),
      options_(std::move(options)),
      memory_(std::move(memory)),
      position_of_rank_(comm.size()),
      expected_(kSlots, 0),
      base_(kSlots, 0) {
  for (int p = 0; p < comm.size(); ++p) position_of_rank_[options_.order[p]] = p;
}

LinkCollectives::~LinkCollectives() = default;

StatusOr<std::unique_ptr<LinkCollectives>> LinkCollectives::Create(Communicator& comm,
                                                                   CopyEngine* engine,
                                                                   LinkCollectivesOptions options) {
  const int n = comm.size();
  if (n > kMaxSteps) {
    return core::InvalidArgument("link collectives: " + std::to_string(n) + " ranks, at most " +
                                 std::to_string(kMaxSteps));
  }
  if (static_cast<int>(options.endpoint_of_rank.size()) != n) {
    return core::InvalidArgument("link collectives: endpoint_of_rank has " +
                                 std::to_string(options.endpoint_of_rank.size()) + " entries for " +
                                 std::to_string(n) + " ranks");
  }
  const int endpoints = engine->fabric().links().num_endpoints;
  for (int e : options.endpoint_of_rank) {
    if (e < 0 || e >= endpoints) {
      return core::InvalidArgument("link collectives: endpoint " + std::to_string(e) +
                                   " not in [0, " + std::to_string(endpoints) + ")");
    }
  }
  if (options.endpoint_of_rank[comm.rank()] != engine->self_endpoint()) {
    return core::InvalidArgument("link collectives: this rank's endpoint " +
                                 std::to_string(options.endpoint_of_rank[comm.rank()]) +
                                 " is not the copy engine's " +
                                 std::to_string(engine->self_endpoint()));
  }
  std::vector<int> sorted = options.order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < n; ++i) {
    if (static_cast<int>(sorted.size()) != n || sorted[i] != i) {
      return core::InvalidArgument(
          "link collectives: the ring order must be a permutation of "
          "0.." +
          std::to_string(n - 1));
    }
  }
  if (options.window_bytes < 1 || options.window_bytes > SymmetricMemory::kMaxSegmentBytes) {
    return core::InvalidArgument("link collectives: window_bytes " +
                                 std::to_string(options.window_bytes) + " out of range");
  }
  if (options.wire_element_bytes < 1 || options.wire_element_bytes > 8) {
    return core::InvalidArgument("link collectives: wire_element_bytes " +
                                 std::to_string(options.wire_element_bytes) +
                                 ", must be in [1, 8]");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SymmetricMemory> memory,
                   SymmetricMemory::Create(comm, kHeaderBytes + options.window_bytes));
  return std::unique_ptr<LinkCollectives>(
      new LinkCollectives(comm, engine, std::move(options), std::move(memory)));
}

int64_t LinkCollectives::AllGatherWindowBytes(int n, int64_t count, DType t) {
  return n * count * DTypeSize(t);
}
int64_t LinkCollectives::ReduceScatterWindowBytes(int n, int64_t count, DType t) {
  return (n - 1) * count * std::max(AccSize(t), DTypeSize(t));
}

std::atomic<uint32_t>* LinkCollectives::Signal(int rank, int slot) const {
  return reinterpret_cast<std::atomic<uint32_t>*>(memory_->segment(rank)) + slot;
}

std::atomic<int64_t>* LinkCollectives::Stamp(int rank, int slot, int chunk) const {
  return reinterpret_cast<std::atomic<int64_t>*>(memory_->segment(rank) + kStampOffset) +
         slot * kMaxLinkChunks + chunk;
}

std::byte* LinkCollectives::Data(int rank) const { return memory_->segment(rank) + kHeaderBytes; }

int64_t LinkCollectives::Deadline() const {
  const double t = comm_.op_timeout_s();
  if (t == kNoTimeout) return kNoDeadline;
  return NowNs() + static_cast<int64_t>(t * 1e9);
}

bool LinkCollectives::Arrived(int slot) const {
  return CounterReached(Signal(comm_.rank(), slot)->load(std::memory_order_acquire),
                        expected_[slot] + 1);
}

Status LinkCollectives::Wait(int slot, int dir) {
  const uint32_t target = ++expected_[slot];
  if (!WaitAtLeast(Signal(comm_.rank(), slot), target, Deadline())) {
    return core::DeadlineExceeded("emulated collective: no data from a peer within " +
                                  std::to_string(comm_.op_timeout_s()) + " s");
  }
  const int chunk = static_cast<int>(target - 1 - base_[slot]);
  CHECK(chunk >= 0 && chunk < kMaxLinkChunks) << "chunk " << chunk << " on slot " << slot;
  timeline_ns_[dir] = std::max(timeline_ns_[dir], Stamp(comm_.rank(), slot, chunk)->load());
  return Status::Ok();
}

Status LinkCollectives::Progress(int dirs, const std::function<int(int)>& next_slot,
                                 const std::function<Status(int)>& handle) {
  if (dirs == 1) {
    for (int slot = next_slot(0); slot >= 0; slot = next_slot(0)) {
      RETURN_IF_ERROR(Wait(slot, 0));
      RETURN_IF_ERROR(handle(0));
    }
    return Status::Ok();
  }
  std::atomic<uint32_t>* wake = Signal(comm_.rank(), kWakeSlot);
  for (;;) {
    // Read the wake counter before looking at the slots: a message landing after the look
    // bumps it past `seen`, so the wait below cannot miss it.
    const uint32_t seen = wake->load(std::memory_order_acquire);
    bool pending = false, served = false;
    for (int d = 0; d < dirs; ++d) {
      const int slot = next_slot(d);
      if (slot < 0) continue;
      pending = true;
      if (!Arrived(slot)) continue;
      RETURN_IF_ERROR(Wait(slot, d));
      RETURN_IF_ERROR(handle(d));
      served = true;
    }
    if (!pending) return Status::Ok();
    if (!served && !WaitAtLeast(wake, seen + 1, Deadline())) {
      return core::DeadlineExceeded("emulated collective: no data from a peer within " +
                                    std::to_string(comm_.op_timeout_s()) + " s");
    }
  }
}

void LinkCollectives::LocalInputsReady(int dir) {
  timeline_ns_[dir] = std::max(timeline_ns_[dir], NowNs());
}

void LinkCollectives::Send(int to_rank, int64_t dst_offset, const void* src, int64_t bytes,
                           int64_t elements, int slot_at_receiver, int chunk, int dir, bool wake) {
  CHECK(chunk >= 0 && chunk < chunks_) << "chunk " << chunk;
  CopyEngine::Put put;
  put.dst_endpoint = options_.endpoint_of_rank[to_rank];
  put.dst = Data(to_rank) + dst_offset;
  put.src = static_cast<const std::byte*>(src);
  put.bytes = bytes;
  put.wire_bytes = elements * options_.wire_element_bytes;
  put.signal = Signal(to_rank, slot_at_receiver);
  if (wake) put.wake = Signal(to_rank, kWakeSlot);
  put.arrival_stamp = Stamp(to_rank, slot_at_receiver, chunk);
  put.ready_ns = timeline_ns_[dir];
  engine_->Submit(put);
}

int LinkCollectives::ChunkCount(LinkAlgo algo, int64_t count) const {
  std::vector<int> endpoint_at(options_.order.size());
  for (size_t p = 0; p < endpoint_at.size(); ++p) {
    endpoint_at[p] = options_.endpoint_of_rank[options_.order[p]];
  }
  return PacedChunkCount(engine_->fabric().links(), endpoint_at, algo,
                         static_cast<double>(count * options_.wire_element_bytes));
}

Status LinkCollectives::BeginCollective() {
  const uint32_t target = collectives_done_ * static_cast<uint32_t>(comm_.size() - 1);
  if (!WaitAtLeast(Signal(comm_.rank(), kReadySlot), target, Deadline())) {
    return core::DeadlineExceeded(
        "emulated collective: a peer did not finish the previous collective within " +
        std::to_string(comm_.op_timeout_s()) + " s");
  }
  timeline_ns_[0] = timeline_ns_[1] = 0;  // sends start when submitted until data arrive
  base_ = expected_;
  return Status::Ok();
}

Status LinkCollectives::EndCollective() {
  if (!engine_->WaitAllDone(Deadline())) {
    return core::DeadlineExceeded("emulated collective: the copy engine did not finish within " +
                                  std::to_string(comm_.op_timeout_s()) + " s");
  }
  for (int r = 0; r < comm_.size(); ++r) {
    if (r != comm_.rank()) Bump(Signal(r, kReadySlot));
  }
  ++collectives_done_;
  return Status::Ok();
}

// Chunk j of [lo, hi): [lo + len*j/k, lo + len*(j+1)/k), k = this collective's count.
std::pair<int64_t, int64_t> LinkCollectives::Chunk(int64_t lo, int64_t hi, int j) const {
  const int64_t len = hi - lo;
  return {lo + len * j / chunks_, lo + len * (j + 1) / chunks_};
}

// The first part's length: ring2 splits a block at a granule boundary (hooks) or in the middle.
int64_t FirstHalf(int64_t c, bool two, const BlockHooks* hooks) {
  if (!two) return c;
  if (hooks == nullptr) return c / 2;
  const int64_t g = std::max<int64_t>(1, hooks->granule);
  return c / g / 2 * g;
}

template <typename T>
Status LinkCollectives::AllGatherT(const T* send, T* recv, int64_t c, LinkAlgo algo,
                                   const BlockHooks* hooks) {
  const int n = comm_.size(), me = comm_.rank(), p = position_of_rank_[me];
  const auto& order = options_.order;
  const int next = order[RingIndex(p + 1, n)], prev = order[RingIndex(p - 1, n)];
  constexpr int64_t kT = sizeof(T);
  const int64_t bb = c * kT;
  std::byte* win = Data(me);
  RETURN_IF_ERROR(BeginCollective());
  chunks_ = ChunkCount(algo, c);
  // Blocks land in every window at their rank's offset. A rank's own block is sent straight
  // from `send`; a received chunk is forwarded from the window as soon as it arrives, then
  // copied out to `recv` while the rest is on the wire.
  const std::byte* own = reinterpret_cast<const std::byte*>(send);
  auto send_chunks = [&](int to, int block, const std::byte* src, int64_t lo, int64_t hi, int slot,
                         int dir, bool wake) {
    for (int j = 0; j < chunks_; ++j) {
      const auto [x, y] = Chunk(lo, hi, j);
      Send(to, block * bb + x * kT, src + x * kT, (y - x) * kT, y - x, slot, j, dir, wake);
    }
  };
  auto copy_out = [&](int block, int64_t x, int64_t y) {
    CopyBytes(recv + block * c + x, win + block * bb + x * kT, (y - x) * kT);
  };
  auto ready = [&](int block, int64_t lo, int64_t hi) -> Status {
    if (hooks == nullptr || !hooks->ready || lo >= hi) return Status::Ok();
    return hooks->ready(block, lo, hi);
  };
  if (algo == LinkAlgo::kRing1 || algo == LinkAlgo::kRing2) {
    const bool two = algo == LinkAlgo::kRing2;
    const int dirs = two ? 2 : 1;
    const int64_t h0 = FirstHalf(c, two, hooks);  // [0, h0) clockwise, [h0, c) counter
    if (n > 1) {
      send_chunks(next, me, own, 0, h0, CwSlot(0), 0, two);
      if (two) send_chunks(prev, me, own, h0, c, CcwSlot(0), 1, true);
    }
    CopyBytes(recv + me * c, send, bb);
    RETURN_IF_ERROR(ready(me, 0, c));
    // Direction d receives at step s the block of position p-s-1 (clockwise) or p+s+1
    // (counter-clockwise), its part [0, h0) or [h0, c), and forwards it while more remain.
    int step[2] = {0, 0}, chunk[2] = {0, 0};
    auto next_slot = [&](int d) { return step[d] < n - 1 ? RingSlot(d, step[d]) : -1; };
    auto handle = [&](int d) -> Status {
      const int s = step[d], j = chunk[d];
      const int blk = order[RingIndex(d == 0 ? p - s - 1 : p + s + 1, n)];
      const int64_t lo = d == 0 ? 0 : h0, hi = d == 0 ? h0 : c;
      const auto [x, y] = Chunk(lo, hi, j);
      if (s + 1 < n - 1) {
        Send(d == 0 ? next : prev, blk * bb + x * kT, win + blk * bb + x * kT, (y - x) * kT, y - x,
             RingSlot(d, s + 1), j, d, two);
      }
      copy_out(blk, x, y);
      if (++chunk[d] < chunks_) return Status::Ok();
      chunk[d] = 0;
      ++step[d];
      return ready(blk, lo, hi);
    };
    RETURN_IF_ERROR(Progress(dirs, next_slot, handle));
  } else {
    // Step s pushes the own block to position p-s; the next step's push is issued once the
    // data of this step has arrived.
    if (n > 1) send_chunks(order[RingIndex(p - 1, n)], me, own, 0, c, DirectSlot(1), 0, false);
    CopyBytes(recv + me * c, send, bb);
    RETURN_IF_ERROR(ready(me, 0, c));
    int s = 1, j = 0;
    auto next_slot = [&](int) { return s < n ? DirectSlot(s) : -1; };
    auto handle = [&](int) -> Status {
      const int from = order[RingIndex(p + s, n)];
      const auto [x, y] = Chunk(0, c, j);
      if (j == chunks_ - 1 && s + 1 < n) {
        send_chunks(order[RingIndex(p - s - 1, n)], me, own, 0, c, DirectSlot(s + 1), 0, false);
      }
      copy_out(from, x, y);
      if (++j < chunks_) return Status::Ok();
      j = 0;
      ++s;
      return ready(from, 0, c);
    };
    RETURN_IF_ERROR(Progress(1, next_slot, handle));
  }
  return EndCollective();
}

template <typename T, typename Acc>
Status LinkCollectives::ReduceScatterT(const T* send, T* recv, int64_t c, LinkAlgo algo,
                                       const BlockHooks* hooks) {
  const int n = comm_.size(), me = comm_.rank(), p = position_of_rank_[me];
  const auto& order = options_.order;
  const int next = order[RingIndex(p + 1, n)], prev = order[RingIndex(p - 1, n)];
  constexpr int64_t kAcc = sizeof(Acc);
  std::byte* win = Data(me);
  RETURN_IF_ERROR(BeginCollective());
  chunks_ = ChunkCount(algo, c);
  // dir: the direction whose next sends wait for this computation (-1: none).
  auto produce = [&](int block, int64_t lo, int64_t hi, int dir) -> Status {
    if (hooks == nullptr || !hooks->produce || lo >= hi) return Status::Ok();
    RETURN_IF_ERROR(hooks->produce(block, lo, hi));
    if (dir >= 0) LocalInputsReady(dir);
    return Status::Ok();
  };
  if (n == 1) {
    RETURN_IF_ERROR(produce(me, 0, c, -1));
    std::copy(send, send + c, recv);
    return EndCollective();
  }
  if (algo == LinkAlgo::kDirect) {
    // Raw contributions (T) land in slot s-1; the sum is taken here in step order, chunk by
    // chunk as they arrive. The next step's push is issued once this step's data arrived.
    // Fused: each receiver's block is produced before its push (the next one while the
    // current step's data arrive), the own block right after the first push.
    const int64_t tb = c * static_cast<int64_t>(sizeof(T));
    auto to_of = [&](int s) { return order[RingIndex(p - s, n)]; };
    auto push = [&](int s) {
      for (int j = 0; j < chunks_; ++j) {
        const auto [x, y] = Chunk(0, c, j);
        Send(to_of(s), (s - 1) * tb + x * static_cast<int64_t>(sizeof(T)), send + to_of(s) * c + x,
             (y - x) * static_cast<int64_t>(sizeof(T)), y - x, DirectSlot(s), j, 0);
      }
    };
    RETURN_IF_ERROR(produce(to_of(1), 0, c, 0));
    push(1);
    RETURN_IF_ERROR(produce(me, 0, c, 0));
    std::vector<Acc> sum(c);
    for (int64_t i = 0; i < c; ++i) sum[i] = ToAcc<Acc>(send[me * c + i]);
    int s = 1, j = 0;
    auto next_slot = [&](int) { return s < n ? DirectSlot(s) : -1; };
    auto handle = [&](int) -> Status {
      const auto [x, y] = Chunk(0, c, j);
      if (j == chunks_ - 1 && s + 1 < n) push(s + 1);
      const T* in = reinterpret_cast<const T*>(win + (s - 1) * tb);
      for (int64_t i = x; i < y; ++i) sum[i] += ToAcc<Acc>(in[i]);
      if (s == n - 1) {
        for (int64_t i = x; i < y; ++i) recv[i] = FromAcc<T>(sum[i]);
      }
      if (++j < chunks_) return Status::Ok();
      j = 0;
      // The next receiver's block is produced while this step's data arrive.
      if (++s + 1 < n) return produce(to_of(s + 1), 0, c, 0);
      return Status::Ok();
    };
    if (n > 2) RETURN_IF_ERROR(produce(to_of(2), 0, c, 0));
    RETURN_IF_ERROR(Progress(1, next_slot, handle));
    return EndCollective();
  }
  // Rings: partial sums (Acc) staged in private memory, one buffer per step (the engine
  // reads them until its messages are done, which may be after an error return). Each chunk
  // is added and sent as soon as its input chunk has arrived.
  auto slot_in = [&](int s) { return reinterpret_cast<const Acc*>(win + s * c * kAcc); };
  stage_.resize(static_cast<size_t>((n - 1) * c * kAcc));
  Acc* stage = reinterpret_cast<Acc*>(stage_.data());
  const bool two = algo == LinkAlgo::kRing2;
  const int dirs = two ? 2 : 1;
  const int64_t h0 = FirstHalf(c, two, hooks);  // [0, h0) go clockwise, [h0, c) counter
  // Direction d at step s < n-1 sends [lo, hi) of block blk(d, s) to its neighbour: the own
  // contribution plus (s > 0) the partial received at step s-1; at step n-1 the last
  // partial arrives and the own contribution is added to it.
  auto lo_of = [&](int d) { return d == 0 ? int64_t{0} : h0; };
  auto hi_of = [&](int d) { return d == 0 ? h0 : c; };
  auto blk = [&](int d, int s) { return order[RingIndex(d == 0 ? p - s - 1 : p + s + 1, n)]; };
  auto add_and_send = [&](int d, int s, int j) {
    const auto [x, y] = Chunk(lo_of(d), hi_of(d), j);
    Acc* out = stage + s * c;
    const int b = blk(d, s);
    for (int64_t i = x; i < y; ++i) {
      out[i] = (s > 0 ? slot_in(s - 1)[i] : Acc{}) + ToAcc<Acc>(send[b * c + i]);
    }
    Send(d == 0 ? next : prev, (s * c + x) * kAcc, out + x, (y - x) * kAcc, y - x, RingSlot(d, s),
         j, d, two);
  };
  bool own_produced = false;
  // Before direction d starts step s: its part of block blk(d, s), or the own block.
  auto prepare = [&](int d, int s) -> Status {
    if (s < n - 1) return produce(blk(d, s), lo_of(d), hi_of(d), d);
    if (own_produced) return Status::Ok();
    own_produced = true;
    return produce(me, 0, c, -1);
  };
  for (int d = 0; d < dirs; ++d) {
    RETURN_IF_ERROR(prepare(d, 0));
    for (int j = 0; j < chunks_; ++j) add_and_send(d, 0, j);
  }
  for (int d = 0; d < dirs; ++d) RETURN_IF_ERROR(prepare(d, 1));
  int step[2] = {1, 1}, chunk[2] = {0, 0};  // step n-1: the last partials
  const Acc* last = slot_in(n - 2);
  auto next_slot = [&](int d) { return step[d] <= n - 1 ? RingSlot(d, step[d] - 1) : -1; };
  auto handle = [&](int d) -> Status {
    const int s = step[d], j = chunk[d];
    if (s < n - 1) {
      add_and_send(d, s, j);
    } else {
      const auto [x, y] = Chunk(lo_of(d), hi_of(d), j);
      for (int64_t i = x; i < y; ++i) recv[i] = FromAcc<T>(last[i] + ToAcc<Acc>(send[me * c + i]));
    }
    if (++chunk[d] < chunks_) return Status::Ok();
    chunk[d] = 0;
    ++step[d];
    return step[d] <= n - 1 ? prepare(d, step[d]) : Status::Ok();
  };
  RETURN_IF_ERROR(Progress(dirs, next_slot, handle));
  return EndCollective();
}

Status LinkCollectives::Drained(Status st) {
  // After a failure the engine may still read sources (the caller's buffers, the staging)
  // and write windows: let it finish (it never waits on peers, so this is bounded).
  if (!st.ok()) engine_->WaitAllDone(kNoDeadline);
  return st;
}

Status LinkCollectives::AllGather(ConstBuffer send, MutableBuffer recv, LinkAlgo algo,
                                  const BlockHooks* hooks) {
  const int n = comm_.size();
  CHECK(send.dtype == recv.dtype && recv.count == n * send.count);
  const int64_t need = AllGatherWindowBytes(n, send.count, send.dtype);
  if (need > options_.window_bytes) {
    return core::InvalidArgument("emulated AllGather needs " + std::to_string(need) +
                                 " bytes of symmetric memory per rank, the window has " +
                                 std::to_string(options_.window_bytes));
  }
  Status st = core::Internal("emulated AllGather: unknown dtype");
  switch (send.dtype) {
    case DType::kF32:
      st = AllGatherT(static_cast<const float*>(send.data), static_cast<float*>(recv.data),
                      send.count, algo, hooks);
      break;
    case DType::kBF16:
      st = AllGatherT(static_cast<const Bf16*>(send.data), static_cast<Bf16*>(recv.data),
                      send.count, algo, hooks);
      break;
    case DType::kI64:
      st = AllGatherT(static_cast<const int64_t*>(send.data), static_cast<int64_t*>(recv.data),
                      send.count, algo, hooks);
      break;
    case DType::kF64:
      st = AllGatherT(static_cast<const double*>(send.data), static_cast<double*>(recv.data),
                      send.count, algo, hooks);
      break;
  }
  return Drained(std::move(st));
}

Status LinkCollectives::ReduceScatter(ConstBuffer send, MutableBuffer recv, LinkAlgo algo,
                                      const BlockHooks* hooks) {
  const int n = comm_.size();
  CHECK(send.dtype == recv.dtype && send.count == n * recv.count);
  const int64_t need = ReduceScatterWindowBytes(n, recv.count, send.dtype);
  if (need > options_.window_bytes) {
    return core::InvalidArgument("emulated ReduceScatter needs " + std::to_string(need) +
                                 " bytes of symmetric memory per rank, the window has " +
                                 std::to_string(options_.window_bytes));
  }
  const int64_t c = recv.count;
  Status st = core::Internal("emulated ReduceScatter: unknown dtype");
  switch (send.dtype) {
    case DType::kF32:
      st = ReduceScatterT<float, float>(static_cast<const float*>(send.data),
                                        static_cast<float*>(recv.data), c, algo, hooks);
      break;
    case DType::kBF16:
      st = ReduceScatterT<Bf16, float>(static_cast<const Bf16*>(send.data),
                                       static_cast<Bf16*>(recv.data), c, algo, hooks);
      break;
    case DType::kI64:
      st = ReduceScatterT<int64_t, int64_t>(static_cast<const int64_t*>(send.data),
                                            static_cast<int64_t*>(recv.data), c, algo, hooks);
      break;
    case DType::kF64:
      st = ReduceScatterT<double, double>(static_cast<const double*>(send.data),
                                          static_cast<double*>(recv.data), c, algo, hooks);
      break;
  }
  return Drained(std::move(st));
}

}  // namespace tessera::comm
