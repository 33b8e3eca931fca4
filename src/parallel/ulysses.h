// Ulysses (head-split all-to-all) for a group of h members that split a batch of sequences by
// rows (SequenceShards over the h members: rows[m][s] rows of sequence s on member m).
//
//  - Local side: each member holds its own rows of every sequence with all H heads, inside
//    packed (T_local, H, D) tensors; its rows of sequence s start at row
//    local_row_offsets[s] (the rest of the local tensors is not touched).
//  - Head-split side: each member holds the group's concatenation (sequence-major, members
//    in order within a sequence; SequenceShards::CuSeqlens) for its H/h heads only:
//    (T_super, H/h, D) tensors with T_super = shards.TotalRows(); member j holds heads
//    j*H/h .. (j+1)*H/h - 1.
//
// UlyssesScatter maps local -> head-split with one all-to-all over the group; UlyssesGather is
// its exact inverse. Both move nt tensors at once (one message per peer) and are pure copies,
// so results are bit-exact. With h == 1 they copy locally and `group` may be null; otherwise
// `group` has h ranks and this member is its rank `member`. Staging (the packed send and
// receive buffers of the all-to-all, h > 1 only) is the caller's, as UlyssesStaging: device
// workspaces it reuses, or buffers of one call from its allocator (AllocateUlyssesStaging);
// nothing is allocated inside.
// Collective: every member of the group calls with the same shards, heads, head_dim and
// tensor count. Errors: InvalidArgument for an inconsistent layout or group, or staging too
// small (before any communication), else what the communicator returns.
// Thread-safety: as the communicator (one thread per member).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "parallel/sequence_shards.h"
#include "runtime/device_allocator.h"

namespace tessera::parallel {

struct UlyssesLayout {
  SequenceShards shards;  // rows[m][s] of the h = shards.members() members of the group
  int member = 0;         // this member's index in the group, 0 <= member < h
  int64_t heads = 0;      // H, a multiple of h
  int64_t head_dim = 0;   // D
  // Per sequence: first row of this member's rows[member][s] rows in its packed local
  // (T_local, H, D) tensors.
  std::vector<int64_t> local_row_offsets;

  int group_size() const { return shards.members(); }
  int64_t heads_per_member() const { return heads / group_size(); }  // H/h
  int64_t super_rows() const { return shards.TotalRows(); }          // T_super

  // Consistent shards, 0 <= member < h, H >= 1 a multiple of h, D >= 1, one offset >= 0 per
  // sequence; and, for h > 1, a group of h ranks whose rank is `member`.
  core::Status Validate(const comm::Communicator* group) const;
};

// The floats of this member's local side of nt tensors, nt * MemberRows(member) * H * D, and
// of its head-split side, nt * T_super * (H/h) * D: what a scatter sends and receives (a
// gather the reverse) when h > 1.
int64_t UlyssesLocalFloats(const UlyssesLayout& layout, int num_tensors);
int64_t UlyssesSplitFloats(const UlyssesLayout& layout, int num_tensors);

// Caller-provided staging for one call with h > 1: `send` holds at least the floats the call
// sends (scatter: UlyssesLocalFloats, gather: UlyssesSplitFloats) and `recv` at least those it
// receives (the other one); with h == 1 both may be empty. Contents on return: unspecified.
// Neither may overlap the other or the call's tensors.
struct UlyssesStaging {
  std::span<float> send;
  std::span<float> recv;
};

enum class UlyssesDirection { kScatter, kGather };

// Staging for one call taken from an allocator (workspaces, released when this is destroyed):
// sized for `num_tensors` tensors in `direction` (empty when h == 1). InvalidArgument when
// the layout or group is inconsistent (layout.Validate), else the allocator's errors.
struct OwnedUlyssesStaging {
  runtime::DeviceTensor send;
  runtime::DeviceTensor recv;
  UlyssesStaging view() const { return {send.f32_span(), recv.f32_span()}; }
};
core::StatusOr<OwnedUlyssesStaging> AllocateUlyssesStaging(const comm::Communicator* group,
                                                           const UlyssesLayout& layout,
                                                           int num_tensors,
                                                           UlyssesDirection direction,
                                                           runtime::DeviceAllocator& allocator);

// in[t]: packed local (T_local, H, D); out[t]: (T_super, H/h, D) head slice of this member.
core::Status UlyssesScatter(comm::Communicator* group, const UlyssesLayout& layout,
                            const std::vector<const float*>& in, const std::vector<float*>& out,
                            const UlyssesStaging& staging);

// Inverse: in[t]: (T_super, H/h, D) head slice; out[t]: packed local (T_local, H, D) (only this
// member's rows written).
core::Status UlyssesGather(comm::Communicator* group, const UlyssesLayout& layout,
                           const std::vector<const float*>& in, const std::vector<float*>& out,
                           const UlyssesStaging& staging);

}  // namespace tessera::parallel
