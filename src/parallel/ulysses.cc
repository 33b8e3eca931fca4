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

enum class Direction { kScatter, kGather };

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
Status UlyssesAllToAll(comm::Communicator* group, const UlyssesLayout& l, Direction dir,
                       const std::vector<const float*>& in, const std::vector<float*>& out,
                       core::MemoryTracker* mem) {
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
        std::memcpy(out[t] + dst, in[t] + src, sizeof(float) * l.shards.rows[0][s] * HD);
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
  core::TrackedBuffer send(mem, scatter ? local_pos : super_pos);
  core::TrackedBuffer recv(mem, scatter ? super_pos : local_pos);
  for (int j = 0; j < h; ++j) PackBlocks(send_blocks[j], in, send.data() + sd[j]);
  RETURN_IF_ERROR(group->AllToAllV({send.data(), static_cast<size_t>(send.size())}, sc, sd,
                                   {recv.data(), static_cast<size_t>(recv.size())}, rc, rd));
  for (int j = 0; j < h; ++j) UnpackBlocks(recv_blocks[j], recv.data() + rd[j], out);
  return Status::Ok();
}

}  // namespace

Status UlyssesScatter(comm::Communicator* group, const UlyssesLayout& layout,
                      const std::vector<const float*>& in, const std::vector<float*>& out,
                      core::MemoryTracker* mem) {
  return UlyssesAllToAll(group, layout, Direction::kScatter, in, out, mem);
}

Status UlyssesGather(comm::Communicator* group, const UlyssesLayout& layout,
                     const std::vector<const float*>& in, const std::vector<float*>& out,
                     core::MemoryTracker* mem) {
  return UlyssesAllToAll(group, layout, Direction::kGather, in, out, mem);
}

}  // namespace tessera::parallel
