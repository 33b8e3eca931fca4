// AttentionEngine: executes the attention of every sequence of a batch under a zellige Plan,
// forward and backward, on the calling rank, communicating with the other ranks of `world`.
//
// Token ownership (the exact chunking): a sequence of L tokens placed with config (q,h,k) on
// lambda = q*h*k ranks is cut into lambda contiguous chunks; member i of the placement's rank
// set owns tokens [ChunkBegin(L, lambda, i), ChunkBegin(L, lambda, i + 1)) with
// ChunkBegin(L, lambda, i) = floor(i * L / lambda) (zellige/plan.h), chunk sizes differ by at
// most one.
// A whole sequence (1,1,1) lives entirely on its one rank. The rank keeps all H heads of its
// chunk for Q, K, V, O and their gradients.
//
// Local buffers: a rank's tokens of all its placements are packed, in execution order (its
// segments in issue order, see below, and within a segment in IssueOrder(plan)), into one
// (T_local, H, D) fp32 tensor per quantity (Q, K, V, O, dO, dQ, dK, dV); local_placements()
// gives each placement's row offset and token range in that order. This is the layout a
// model's attention layer hands in and gets back. So every segment's rows are contiguous: the
// segment of this rank's whole sequences runs its one varlen call directly on the caller's
// buffers (no staging copies), forward and backward.
//
// Execution (member i: hi = i % h, qi = (i / h) % q, ki = i / (h*q), parallel_config.h):
//  1. Ulysses over the h consecutive members of (qi, ki): one all-to-all turns the h member
//     chunks (all heads) into their concatenation ("super-chunk" g = ki*q + qi) for H/h heads.
//  2. All-gather of K/V over the q members of (hi, ki): every member gets the K/V of the
//     ring chunk ki (the q super-chunks ki*q .. ki*q+q-1), keeps its own super-chunk's Q.
//  3. Ring over the k members of (hi, qi): K/V ring chunks travel to member ki+1 with
//     ISend/IRecv overlapped with attention on the current chunk; partials merge by LSE.
//  4. The inverse all-to-all returns O to the member chunks with all heads.
// Backward mirrors it: all-to-all of dO; ring backward with the GLOBAL O/LSE, K/V travel as
// in the forward and the accumulating dK/dV travel with them back to their owner (k hops);
// a reduce-scatter (all-to-all + local sum) of the ring chunk's dK/dV over the q members;
// the inverse all-to-all of dQ, dK, dV.
// The data movement of steps 1, 2, 4 and of the reduce-scatter is the parallel layer's
// (parallel/ulysses.h, parallel/shard_gather.h; groups from parallel/member_mesh.h); the engine
// only describes its segments to it.
// Segments: placements with the same config and the same ordered rank set form one segment
// and share every collective and one varlen attention call per step; in particular all whole
// sequences of a rank are one varlen call, forward and backward. Segments run in the order of
// their first placement in IssueOrder(plan), the same on every rank, so collectives never
// cross. Ring point-to-point uses `world` (tags kTagKv, kTagDkv); the Ulysses and all-gather
// groups are sub-communicators of `world`, all created in Create() in that global order.
//
// Errors: Create validates everything (plan vs world size and batch via ValidatePlan, heads,
// head dim) on every rank before any communication and returns InvalidArgument; it is
// deterministic in its inputs, so given the same plan every rank fails alike and nothing
// hangs. Forward/Backward check buffer sizes before communicating. Communication errors
// (e.g. DeadlineExceeded from world's op timeout) are returned as is.
// Thread-safety: one engine per rank, used by that rank's thread; world must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "kernels/attention.h"
#include "runtime/device_allocator.h"
#include "workload/batch.h"
#include "zellige/plan.h"

namespace tessera::zellige::engine {

// ChunkBegin (the chunking above) is zellige/plan.h's.

struct LocalPlacement {
  int placement = 0;        // index into plan.placements
  int seq = 0;              // index into batch.sequences
  int member = 0;           // this rank's index in placement.ranks
  int64_t token_begin = 0;  // this rank's tokens of the sequence: [token_begin, token_end)
  int64_t token_end = 0;
  int64_t offset = 0;  // first row of this range in the rank's packed local buffers
  int64_t size() const { return token_end - token_begin; }
};

// What Backward needs from the matching Forward (one per layer in a model). Opaque; movable.
struct ForwardState {
  struct Segment {
    // A whole-sequence segment keeps only lse (its Q/K/V/O are the caller's buffers).
    runtime::DeviceTensor q_h;      // (T_super, H/h, D): this member's super-chunk queries
    runtime::DeviceTensor kv_ring;  // K then V of ring chunk ki, each (T_ring, H/h, D)
    runtime::DeviceTensor o_h;      // (T_super, H/h, D) global output
    runtime::DeviceTensor lse;      // (T_super, H/h) global log-sum-exp
  };
  std::vector<Segment> segments;  // this rank's segments in execution order
};

class AttentionEngine {
 public:
  static constexpr int kTagKv = 101;
  static constexpr int kTagDkv = 102;

  struct Options {
    kernels::AttentionTiling tiling;
  };

  // Validates and creates the sub-communicators this rank needs (collective over the
  // members of each group). `world` must have size plan.num_ranks.
  static core::StatusOr<std::unique_ptr<AttentionEngine>> Create(const zellige::Plan& plan,
                                                                 const workload::Batch& batch,
                                                                 int heads, int head_dim,
                                                                 comm::Communicator* world,
                                                                 Options options);
  static core::StatusOr<std::unique_ptr<AttentionEngine>> Create(const zellige::Plan& plan,
                                                                 const workload::Batch& batch,
                                                                 int heads, int head_dim,
                                                                 comm::Communicator* world) {
    return Create(plan, batch, heads, head_dim, world, Options());
  }
  ~AttentionEngine();

  int heads() const { return heads_; }
  int head_dim() const { return head_dim_; }
  // Placements that include this rank, in local buffer order (offsets ascending).
  const std::vector<LocalPlacement>& local_placements() const { return local_; }
  // Rows of the packed local buffers (sum of local_placements()[i].size()).
  int64_t local_tokens() const { return local_tokens_; }
  // Number of segments this rank takes part in (for tests: whole sequences coalesce).
  int num_local_segments() const;

  // q, k, v: (local_tokens(), H, D); o: same, written. Fills *state for Backward.
  core::Status Forward(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                       std::span<float> o, ForwardState* state);
  // q, k, v, o: exactly what the matching Forward got and wrote (whole-sequence segments read
  // them here instead of keeping copies in `state`); d_o: (local_tokens(), H, D); dq, dk, dv
  // written, same shape.
  core::Status Backward(const ForwardState& state, std::span<const float> q,
                        std::span<const float> k, std::span<const float> v,
                        std::span<const float> o, std::span<const float> d_o, std::span<float> dq,
                        std::span<float> dk, std::span<float> dv);

  // The engine's buffers on this rank (per-segment head-split Q/K/V/O, the gathered ring-chunk
  // K/V and LSE kept in ForwardState, all-to-all and all-gather staging, ring receive buffers
  // and partial outputs), counted in exact fp32 bytes (granularity 4). Not counted: the
  // caller's tensors, offset arrays, the kernels' tile scratch, MPI's buffers. A ForwardState
  // must be destroyed before its engine.
  runtime::DeviceAllocator& memory() { return memory_; }

  struct SegmentInfo;  // internal

 private:
  AttentionEngine() = default;

  int heads_ = 0;
  int head_dim_ = 0;
  comm::Communicator* world_ = nullptr;
  Options options_;
  std::vector<LocalPlacement> local_;
  int64_t local_tokens_ = 0;
  std::vector<std::unique_ptr<SegmentInfo>> segments_;
  runtime::HeapDeviceAllocator memory_{0, sizeof(float)};
};

}  // namespace tessera::zellige::engine
