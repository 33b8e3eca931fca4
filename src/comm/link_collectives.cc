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
// then one data slot per step for each of three directions.
constexpr int kReadySlot = 0;
constexpr int kSlots = 1 + 3 * kMaxSteps;
// Then, from kStampOffset, the arrival time of each chunk message per data slot
// (copy_engine.h's Put::arrival_stamp): every data slot receives kLinkChunks messages per
// collective, chunk 0 first, so the receiver's count on the slot names the chunk.
constexpr int64_t kStampOffset = 4096;
constexpr int64_t kHeaderBytes = kStampOffset + 32768;
static_assert(kSlots * sizeof(std::atomic<uint32_t>) <= kStampOffset);
static_assert(kSlots * kLinkChunks * sizeof(std::atomic<int64_t>) <= kHeaderBytes - kStampOffset);

int CwSlot(int step) { return 1 + step; }
int CcwSlot(int step) { return 1 + kMaxSteps + step; }
int DirectSlot(int step) { return 1 + 2 * kMaxSteps + step; }

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
      expected_(kSlots, 0) {
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
         slot * kLinkChunks + chunk;
}

std::byte* LinkCollectives::Data(int rank) const { return memory_->segment(rank) + kHeaderBytes; }

int64_t LinkCollectives::Deadline() const {
  const double t = comm_.op_timeout_s();
  if (t == kNoTimeout) return kNoDeadline;
  return NowNs() + static_cast<int64_t>(t * 1e9);
}

Status LinkCollectives::Wait(int slot) {
  const uint32_t target = ++expected_[slot];
  if (!WaitAtLeast(Signal(comm_.rank(), slot), target, Deadline())) {
    return core::DeadlineExceeded("emulated collective: no data from a peer within " +
                                  std::to_string(comm_.op_timeout_s()) + " s");
  }
  const int chunk = static_cast<int>((target - 1) % kLinkChunks);
  timeline_ns_ = std::max(timeline_ns_, Stamp(comm_.rank(), slot, chunk)->load());
  return Status::Ok();
}

void LinkCollectives::LocalInputsReady() { timeline_ns_ = std::max(timeline_ns_, NowNs()); }

void LinkCollectives::Send(int to_rank, int64_t dst_offset, const void* src, int64_t bytes,
                           int64_t elements, int slot_at_receiver, int chunk) {
  CHECK(chunk >= 0 && chunk < kLinkChunks) << "chunk " << chunk;
  CopyEngine::Put put;
  put.dst_endpoint = options_.endpoint_of_rank[to_rank];
  put.dst = Data(to_rank) + dst_offset;
  put.src = static_cast<const std::byte*>(src);
  put.bytes = bytes;
  put.wire_bytes = elements * options_.wire_element_bytes;
  put.signal = Signal(to_rank, slot_at_receiver);
  put.arrival_stamp = Stamp(to_rank, slot_at_receiver, chunk);
  put.ready_ns = timeline_ns_;
  engine_->Submit(put);
}

Status LinkCollectives::BeginCollective() {
  const uint32_t target = collectives_done_ * static_cast<uint32_t>(comm_.size() - 1);
  if (!WaitAtLeast(Signal(comm_.rank(), kReadySlot), target, Deadline())) {
    return core::DeadlineExceeded(
        "emulated collective: a peer did not finish the previous collective within " +
        std::to_string(comm_.op_timeout_s()) + " s");
  }
  timeline_ns_ = 0;  // sends start when submitted until data arrive
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

// Chunk j of [lo, hi): [lo + len*j/k, lo + len*(j+1)/k).
std::pair<int64_t, int64_t> LinkCollectives::Chunk(int64_t lo, int64_t hi, int j) {
  const int64_t len = hi - lo;
  return {lo + len * j / kLinkChunks, lo + len * (j + 1) / kLinkChunks};
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
  // Blocks land in every window at their rank's offset. A rank's own block is sent straight
  // from `send`; a received chunk is forwarded from the window as soon as it arrives, then
  // copied out to `recv` while the rest is on the wire.
  const std::byte* own = reinterpret_cast<const std::byte*>(send);
  auto send_chunks = [&](int to, int block, const std::byte* src, int64_t lo, int64_t hi,
                         int slot) {
    for (int j = 0; j < kLinkChunks; ++j) {
      const auto [a, b] = Chunk(lo, hi, j);
      Send(to, block * bb + a * kT, src + a * kT, (b - a) * kT, b - a, slot, j);
    }
  };
  auto copy_out = [&](int block, int64_t a, int64_t b) {
    CopyBytes(recv + block * c + a, win + block * bb + a * kT, (b - a) * kT);
  };
  // Receives [lo, hi) of `block` on `slot` chunk by chunk; forward(j, a, b) runs for each
  // chunk before it is copied out.
  auto receive = [&](int block, int64_t lo, int64_t hi, int slot, auto&& forward) -> Status {
    for (int j = 0; j < kLinkChunks; ++j) {
      const auto [a, b] = Chunk(lo, hi, j);
      RETURN_IF_ERROR(Wait(slot));
      forward(j, a, b);
      copy_out(block, a, b);
    }
    return Status::Ok();
  };
  auto ready = [&](int block, int64_t lo, int64_t hi) -> Status {
    if (hooks == nullptr || !hooks->ready || lo >= hi) return Status::Ok();
    return hooks->ready(block, lo, hi);
  };
  if (algo == LinkAlgo::kRing1 || algo == LinkAlgo::kRing2) {
    const bool two = algo == LinkAlgo::kRing2;
    const int64_t h0 = FirstHalf(c, two, hooks);  // [0, h0) clockwise, [h0, c) counter
    if (n > 1) {
      send_chunks(next, me, own, 0, h0, CwSlot(0));
      if (two) send_chunks(prev, me, own, h0, c, CcwSlot(0));
    }
    CopyBytes(recv + me * c, send, bb);
    RETURN_IF_ERROR(ready(me, 0, c));
    for (int s = 0; s < n - 1; ++s) {
      const bool more = s + 1 < n - 1;
      const int a = order[RingIndex(p - s - 1, n)];
      RETURN_IF_ERROR(receive(a, 0, h0, CwSlot(s), [&](int j, int64_t x, int64_t y) {
        if (more)
          Send(next, a * bb + x * kT, win + a * bb + x * kT, (y - x) * kT, y - x, CwSlot(s + 1), j);
      }));
      if (two) {
        const int b = order[RingIndex(p + s + 1, n)];
        RETURN_IF_ERROR(receive(b, h0, c, CcwSlot(s), [&](int j, int64_t x, int64_t y) {
          if (more)
            Send(prev, b * bb + x * kT, win + b * bb + x * kT, (y - x) * kT, y - x, CcwSlot(s + 1),
                 j);
        }));
      }
      RETURN_IF_ERROR(ready(a, 0, h0));
      if (two) RETURN_IF_ERROR(ready(order[RingIndex(p + s + 1, n)], h0, c));
    }
  } else {
    // Step s pushes the own block to position p-s; the next step's push is issued once the
    // data of this step has arrived.
    if (n > 1) send_chunks(order[RingIndex(p - 1, n)], me, own, 0, c, DirectSlot(1));
    CopyBytes(recv + me * c, send, bb);
    RETURN_IF_ERROR(ready(me, 0, c));
    for (int s = 1; s < n; ++s) {
      const int from = order[RingIndex(p + s, n)];
      RETURN_IF_ERROR(receive(from, 0, c, DirectSlot(s), [&](int j, int64_t, int64_t) {
        if (j == kLinkChunks - 1 && s + 1 < n) {
          send_chunks(order[RingIndex(p - s - 1, n)], me, own, 0, c, DirectSlot(s + 1));
        }
      }));
      RETURN_IF_ERROR(ready(from, 0, c));
    }
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
  auto produce = [&](int block, int64_t lo, int64_t hi) -> Status {
    if (hooks == nullptr || !hooks->produce || lo >= hi) return Status::Ok();
    RETURN_IF_ERROR(hooks->produce(block, lo, hi));
    LocalInputsReady();  // what is sent from here on waited for this computation
    return Status::Ok();
  };
  if (n == 1) {
    RETURN_IF_ERROR(produce(me, 0, c));
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
      for (int j = 0; j < kLinkChunks; ++j) {
        const auto [a, b] = Chunk(0, c, j);
        Send(to_of(s), (s - 1) * tb + a * static_cast<int64_t>(sizeof(T)), send + to_of(s) * c + a,
             (b - a) * static_cast<int64_t>(sizeof(T)), b - a, DirectSlot(s), j);
      }
    };
    RETURN_IF_ERROR(produce(to_of(1), 0, c));
    push(1);
    RETURN_IF_ERROR(produce(me, 0, c));
    std::vector<Acc> sum(c);
    for (int64_t i = 0; i < c; ++i) sum[i] = ToAcc<Acc>(send[me * c + i]);
    for (int s = 1; s < n; ++s) {
      if (s + 1 < n) RETURN_IF_ERROR(produce(to_of(s + 1), 0, c));
      const T* in = reinterpret_cast<const T*>(win + (s - 1) * tb);
      for (int j = 0; j < kLinkChunks; ++j) {
        const auto [a, b] = Chunk(0, c, j);
        RETURN_IF_ERROR(Wait(DirectSlot(s)));
        if (j == kLinkChunks - 1 && s + 1 < n) push(s + 1);
        for (int64_t i = a; i < b; ++i) sum[i] += ToAcc<Acc>(in[i]);
        if (s == n - 1) {
          for (int64_t i = a; i < b; ++i) recv[i] = FromAcc<T>(sum[i]);
        }
      }
    }
    return EndCollective();
  }
  // Rings: partial sums (Acc) staged in private memory, one buffer per step (the engine
  // reads them until its messages are done, which may be after an error return). Each chunk
  // is added and sent as soon as its input chunk has arrived.
  auto slot_in = [&](int s) { return reinterpret_cast<const Acc*>(win + s * c * kAcc); };
  stage_.resize(static_cast<size_t>((n - 1) * c * kAcc));
  Acc* stage = reinterpret_cast<Acc*>(stage_.data());
  const bool two = algo == LinkAlgo::kRing2;
  const int64_t h0 = FirstHalf(c, two, hooks);  // [0, h0) go clockwise, [h0, c) counter
  // One direction of step s: [lo, hi) of block `blk` to `to`, input from slot `in_slot`.
  auto step_part = [&](int s, int64_t lo, int64_t hi, int blk, int to, int in_slot,
                       int out_slot) -> Status {
    Acc* out = stage + s * c;
    RETURN_IF_ERROR(produce(blk, lo, hi));
    for (int j = 0; j < kLinkChunks; ++j) {
      const auto [a, b] = Chunk(lo, hi, j);
      if (s > 0) RETURN_IF_ERROR(Wait(in_slot));
      for (int64_t i = a; i < b; ++i) {
        out[i] = (s > 0 ? slot_in(s - 1)[i] : Acc{}) + ToAcc<Acc>(send[blk * c + i]);
      }
      Send(to, (s * c + a) * kAcc, out + a, (b - a) * kAcc, b - a, out_slot, j);
    }
    return Status::Ok();
  };
  for (int s = 0; s < n - 1; ++s) {
    const int in_cw = s > 0 ? CwSlot(s - 1) : 0, in_ccw = s > 0 ? CcwSlot(s - 1) : 0;
    RETURN_IF_ERROR(step_part(s, 0, h0, order[RingIndex(p - s - 1, n)], next, in_cw, CwSlot(s)));
    if (two) {
      RETURN_IF_ERROR(
          step_part(s, h0, c, order[RingIndex(p + s + 1, n)], prev, in_ccw, CcwSlot(s)));
    }
  }
  // The last partials: add the own contribution chunk by chunk as they arrive.
  const Acc* in = slot_in(n - 2);
  RETURN_IF_ERROR(produce(me, 0, c));
  auto finish = [&](int64_t lo, int64_t hi, int slot) -> Status {
    for (int j = 0; j < kLinkChunks; ++j) {
      const auto [a, b] = Chunk(lo, hi, j);
      RETURN_IF_ERROR(Wait(slot));
      for (int64_t i = a; i < b; ++i) recv[i] = FromAcc<T>(in[i] + ToAcc<Acc>(send[me * c + i]));
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(finish(0, h0, CwSlot(n - 2)));
  if (two) RETURN_IF_ERROR(finish(h0, c, CcwSlot(n - 2)));
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
