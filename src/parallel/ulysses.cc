// Ulysses all-to-all; see ulysses.h.
#include "parallel/ulysses.h"

#include <cstring>
#include <string>

namespace tessera::parallel {

using core::Status;

Status UlyssesLayout::Validate(const comm::Communicator* group) const {
  RETURN_IF_ERROR(ValidateGroupMember("UlyssesLayout", shards, member, group));
  const int h = group_size();
  if (heads < 1 || heads % h != 0) {
    return core::InvalidArgument("UlyssesLayout.heads = " + std::to_string(heads) +
                                 ", must be a positive multiple of the group size " +
                                 std::to_string(h));
  }
  if (head_dim < 1) {
    return core::InvalidArgument("UlyssesLayout.head_dim = " + std::to_string(head_dim) +
                                 ", must be >= 1");
  }
  if (static_cast<int>(local_row_offsets.size()) != shards.sequences()) {
    return core::InvalidArgument(
        "UlyssesLayout.local_row_offsets has " + std::to_string(local_row_offsets.size()) +
        " entries, must have one per sequence (" + std::to_string(shards.sequences()) + ")");
  }
  for (int64_t off : local_row_offsets) {
    if (off < 0) return core::InvalidArgument("UlyssesLayout.local_row_offsets: negative offset");
  }
  return Status::Ok();
}

namespace {

using Direction = UlyssesDirection;

// This member's rows of every sequence, head slice j, in nt packed local tensors, in the
// order (tensor, sequence): what it sends to (scatter) or receives from (gather) member j.
std::vector<StridedBlock> LocalSliceBlocks(const UlyssesLayout& l, int j, int nt) {
  const int64_t HD = l.heads * l.head_dim, hd = l.heads_per_member() * l.head_dim;
  std::vector<StridedBlock> blocks;
  for (int t = 0; t < nt; ++t)
    for (int s = 0; s < l.shards.sequences(); ++s) {
      blocks.push_back({.tensor = t,
                        .offset = l.local_row_offsets[s] * HD + j * hd,
                        .rows = l.shards.rows[l.member][s],
                        .row_floats = hd,
                        .row_stride = HD});
    }
  return blocks;
}

// Both directions: the local side's blocks (one list per peer j, this member's rows with
// head slice j) and the head-split side's blocks (one list per peer m, member m's rows in
// the concatenation) are the same; the direction says which side is sent.
// Staging: the caller's (checked against the sizes).
Status UlyssesAllToAll(comm::Communicator* group, const UlyssesLayout& l, Direction dir,
                       const std::vector<const float*>& in, const std::vector<float*>& out,
                       const UlyssesStaging& given) {
  RETURN_IF_ERROR(l.Validate(group));
  if (in.size() != out.size()) {
    return core::InvalidArgument("Ulysses: " + std::to_string(in.size()) + " input but " +
                                 std::to_string(out.size()) + " output tensors");
  }
  const int h = l.group_size();
  const int nt = static_cast<int>(in.size());
  const int64_t HD = l.heads * l.head_dim, hd = l.heads_per_member() * l.head_dim;
  if (h == 1) {  // no exchange: whole rows, all heads, between the two layouts
    const std::vector<int64_t> cu = l.shards.CuSeqlens();
    for (int t = 0; t < nt; ++t)
      for (int s = 0; s < l.shards.sequences(); ++s) {
        const int64_t local = l.local_row_offsets[s] * HD, super = cu[s] * hd;
        const int64_t src = dir == Direction::kScatter ? local : super;
        const int64_t dst = dir == Direction::kScatter ? super : local;
        const int64_t floats = l.shards.rows[0][s] * HD;
        if (floats > 0) std::memcpy(out[t] + dst, in[t] + src, sizeof(float) * floats);
      }
    return Status::Ok();
  }
  std::vector<std::vector<StridedBlock>> local(h), super(h);
  std::vector<int64_t> local_counts(h), local_displs(h), super_counts(h), super_displs(h);
  int64_t local_pos = 0, super_pos = 0;
  for (int j = 0; j < h; ++j) {
    local[j] = LocalSliceBlocks(l, j, nt);
    local_counts[j] = BlockFloats(local[j]);
    local_displs[j] = local_pos;
    local_pos += local_counts[j];
    super[j] = l.shards.ConcatBlocks(j, nt, hd);
    super_counts[j] = BlockFloats(super[j]);
    super_displs[j] = super_pos;
    super_pos += super_counts[j];
  }
  const bool scatter = dir == Direction::kScatter;
  const auto& send_blocks = scatter ? local : super;
  const auto& recv_blocks = scatter ? super : local;
  const auto& sc = scatter ? local_counts : super_counts;
  const auto& sd = scatter ? local_displs : super_displs;
  const auto& rc = scatter ? super_counts : local_counts;
  const auto& rd = scatter ? super_displs : local_displs;
  const int64_t send_floats = scatter ? local_pos : super_pos;
  const int64_t recv_floats = scatter ? super_pos : local_pos;
  if (static_cast<int64_t>(given.send.size()) < send_floats ||
      static_cast<int64_t>(given.recv.size()) < recv_floats) {
    return core::InvalidArgument("UlyssesStaging: got " + std::to_string(given.send.size()) +
                                 " send and " + std::to_string(given.recv.size()) +
                                 " receive floats, this call needs " + std::to_string(send_floats) +
                                 " and " + std::to_string(recv_floats) +
                                 " (UlyssesLocalFloats / UlyssesSplitFloats)");
  }
  const std::span<float> send = given.send.first(static_cast<size_t>(send_floats));
  const std::span<float> recv = given.recv.first(static_cast<size_t>(recv_floats));
  for (int j = 0; j < h; ++j) PackBlocks(send_blocks[j], in, send.data() + sd[j]);
  RETURN_IF_ERROR(group->AllToAllV(std::span<const float>(send), sc, sd, recv, rc, rd));
  for (int j = 0; j < h; ++j) UnpackBlocks(recv_blocks[j], recv.data() + rd[j], out);
  return Status::Ok();
}

}  // namespace

int64_t UlyssesLocalFloats(const UlyssesLayout& layout, int num_tensors) {
  return num_tensors * layout.shards.MemberRows(layout.member) * layout.heads * layout.head_dim;
}

int64_t UlyssesSplitFloats(const UlyssesLayout& layout, int num_tensors) {
  return num_tensors * layout.super_rows() * layout.heads_per_member() * layout.head_dim;
}

core::StatusOr<OwnedUlyssesStaging> AllocateUlyssesStaging(const comm::Communicator* group,
                                                           const UlyssesLayout& layout,
                                                           int num_tensors,
                                                           UlyssesDirection direction,
                                                           runtime::DeviceAllocator& allocator) {
  RETURN_IF_ERROR(layout.Validate(group));
  OwnedUlyssesStaging staging;
  if (layout.group_size() == 1) return staging;
  const int64_t local = UlyssesLocalFloats(layout, num_tensors);
  const int64_t split = UlyssesSplitFloats(layout, num_tensors);
  const bool scatter = direction == UlyssesDirection::kScatter;
  ASSIGN_OR_RETURN(staging.send, runtime::AllocateWorkspaceF32(allocator, scatter ? local : split,
                                                               "ulysses.send"));
  ASSIGN_OR_RETURN(staging.recv, runtime::AllocateWorkspaceF32(allocator, scatter ? split : local,
                                                               "ulysses.recv"));
  return staging;
}

Status UlyssesScatter(comm::Communicator* group, const UlyssesLayout& layout,
                      const std::vector<const float*>& in, const std::vector<float*>& out,
                      const UlyssesStaging& staging) {
  return UlyssesAllToAll(group, layout, Direction::kScatter, in, out, staging);
}

Status UlyssesGather(comm::Communicator* group, const UlyssesLayout& layout,
                     const std::vector<const float*>& in, const std::vector<float*>& out,
                     const UlyssesStaging& staging) {
  return UlyssesAllToAll(group, layout, Direction::kGather, in, out, staging);
}

}  // namespace tessera::parallel
