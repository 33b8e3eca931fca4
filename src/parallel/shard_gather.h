// All-gather and reduce-scatter of sequence shards over a group of q members that split a
// batch of sequences by rows (SequenceShards over the q members: rows[m][s] rows of sequence
// s on member m).
//
//  - Member side: member m holds, per tensor, its own rows packed: (MemberRows(m), row_floats)
//    with its rows of sequence 0, then of sequence 1, ...
//  - Concatenated side: the whole group's rows sequence-major (SequenceShards::CuSeqlens),
//    per tensor (TotalRows(), row_floats).
//
// AllGatherShards: every member's packed rows -> the concatenation on every member (one
// AllGatherV; the member-major received blocks are unpacked into sequence-major order).
// ReduceScatterShards: every member holds partial sums of the whole concatenation; member m
// gets, for its own rows, the sum over the group's members taken in member order (one
// AllToAllV of the member blocks, then a local sum 0 + part_0 + part_1 + ...), so every
// member computes bit-identical sums regardless of the communicator's reduction order.
// Both move nt tensors at once. With q == 1 they copy locally and `group` may be null;
// otherwise `group` has q ranks and this member is its rank `member`. Staging buffers are
// workspaces of `mem` for the call (may be null: a private plain allocator, not counted).
// Collective: every member calls with the same shards, row_floats and tensor count. Errors:
// InvalidArgument for an inconsistent layout or group (before any communication), else what the
// communicator returns. Thread-safety: as the communicator (one thread per member).
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "parallel/sequence_shards.h"
#include "runtime/device_allocator.h"

namespace tessera::parallel {

struct ShardGatherLayout {
  SequenceShards shards;   // rows[m][s] of the q = shards.members() members of the group
  int member = 0;          // this member's index in the group, 0 <= member < q
  int64_t row_floats = 0;  // floats per row (e.g. (H/h) * D)

  int group_size() const { return shards.members(); }
  int64_t member_rows() const { return shards.MemberRows(member); }  // this member's rows
  int64_t total_rows() const { return shards.TotalRows(); }          // the concatenation's

  // Consistent shards, 0 <= member < q, row_floats >= 1; for q > 1 a group of q ranks whose
  // rank is `member`.
  core::Status Validate(const comm::Communicator* group) const;
};

// in[t]: (member_rows(), row_floats) packed own rows; out[t]: (total_rows(), row_floats).
core::Status AllGatherShards(comm::Communicator* group, const ShardGatherLayout& layout,
                             const std::vector<const float*>& in, const std::vector<float*>& out,
                             runtime::DeviceAllocator* mem);

// in[t]: (total_rows(), row_floats) this member's partial sums; out[t]: (member_rows(),
// row_floats) the group's sum of this member's rows, in member order.
core::Status ReduceScatterShards(comm::Communicator* group, const ShardGatherLayout& layout,
                                 const std::vector<const float*>& in,
                                 const std::vector<float*>& out, runtime::DeviceAllocator* mem);

}  // namespace tessera::parallel
