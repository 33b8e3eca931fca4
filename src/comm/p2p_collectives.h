// Collective algorithms written over point-to-point (Communicator::ISend / IRecv), usable on
// any backend. They take the same arguments, apply the same checks and produce the same
// results as the corresponding Communicator collectives (bitwise for data movement; for the
// ring all-reduce, the same sum up to fp32 rounding order, identical on every rank). They
// exist so that the algorithm is ours to schedule, trace and model, e.g. a ring step that
// overlaps with compute, and as the reference the simulator's collective models follow.
//
// Algorithms (n ranks, r = this rank, all steps post the receive before the send):
//  - RingAllGatherV: n-1 steps; at step s rank r forwards block (r-s) mod n to rank r+1 and
//    receives block (r-s-1) mod n from rank r-1. Per-rank traffic: everything but its own
//    block, once.
//  - PairwiseAllToAllV: its own block is copied locally, then n-1 steps; at step s rank r
//    sends its block for rank (r+s) mod n and receives from rank (r-s) mod n.
//  - RingAllReduceSum: ring reduce-scatter (n-1 steps) then ring all-gather (n-1 steps) over
//    n contiguous chunks of the buffer; each chunk is summed along the ring, so every rank
//    gets identical bits.
//
// Messages use `tag` (default kCollectiveTag) on `comm`: no other traffic with that tag may
// be in flight on the communicator at the same time. Waits use the communicator's op
// timeout (DeadlineExceeded). Thread-safety: as Communicator.
#pragma once

#include <cstdint>
#include <span>

#include "comm/communicator.h"

namespace tessera::comm {

inline constexpr int kCollectiveTag = kMaxTag;

Status RingAllGatherV(Communicator& comm, std::span<const float> send, std::span<float> recv,
                      std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs,
                      int tag = kCollectiveTag);
// Equal blocks: recv.size() == comm.size() * send.size().
Status RingAllGather(Communicator& comm, std::span<const float> send, std::span<float> recv,
                     int tag = kCollectiveTag);
Status PairwiseAllToAllV(Communicator& comm, std::span<const float> send,
                         std::span<const int64_t> send_counts, std::span<const int64_t> send_displs,
                         std::span<float> recv, std::span<const int64_t> recv_counts,
                         std::span<const int64_t> recv_displs, int tag = kCollectiveTag);
// In place, like Communicator::AllReduceSum (all ranks pass the same length).
Status RingAllReduceSum(Communicator& comm, std::span<float> data, int tag = kCollectiveTag);

}  // namespace tessera::comm
