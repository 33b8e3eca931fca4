// All-gather / reduce-scatter of sequence shards; see shard_gather.h.
#include "parallel/shard_gather.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace tessera::parallel {

using core::Status;

Status ShardGatherLayout::Validate(const comm::Communicator* group) const {
  RETURN_IF_ERROR(ValidateGroupMember("ShardGatherLayout", shards, member, group));
  if (row_floats < 1) {
    return core::InvalidArgument("ShardGatherLayout.row_floats = " + std::to_string(row_floats) +
                                 ", must be >= 1");
  }
  return Status::Ok();
}

namespace {

// The member-major exchange buffer: block m holds member m's rows of all nt tensors in the
// order (tensor, sequence); blocks[m] maps it onto the concatenated tensors.
struct MemberMajor {
  std::vector<std::vector<StridedBlock>> blocks;
  std::vector<int64_t> counts, displs;
  int64_t floats = 0;
};

MemberMajor MemberMajorLayout(const ShardGatherLayout& l, int nt) {
  MemberMajor mm;
  for (int m = 0; m < l.group_size(); ++m) {
    mm.blocks.push_back(l.shards.ConcatBlocks(m, nt, l.row_floats));
    mm.counts.push_back(BlockFloats(mm.blocks.back()));
    mm.displs.push_back(mm.floats);
    mm.floats += mm.counts.back();
  }
  return mm;
}

Status CheckTensors(const char* what, size_t in, size_t out) {
  if (in == out) return Status::Ok();
  return core::InvalidArgument(std::string(what) + ": " + std::to_string(in) + " input but " +
                               std::to_string(out) + " output tensors");
}

}  // namespace

Status AllGatherShards(comm::Communicator* group, const ShardGatherLayout& layout,
                       const std::vector<const float*>& in, const std::vector<float*>& out,
                       runtime::DeviceAllocator* mem) {
  RETURN_IF_ERROR(layout.Validate(group));
  RETURN_IF_ERROR(CheckTensors("AllGatherShards", in.size(), out.size()));
  const int nt = static_cast<int>(in.size());
  const int64_t own = layout.member_rows() * layout.row_floats;
  if (layout.group_size() == 1) {
    for (int t = 0; t < nt && own > 0; ++t) std::memcpy(out[t], in[t], sizeof(float) * own);
    return Status::Ok();
  }
  const MemberMajor mm = MemberMajorLayout(layout, nt);
  runtime::HeapDeviceAllocator private_heap(0, sizeof(float));
  runtime::DeviceAllocator& staging = mem != nullptr ? *mem : private_heap;
  ASSIGN_OR_RETURN(runtime::DeviceTensor send,
                   runtime::AllocateWorkspaceF32(staging, nt * own, "shard_gather.send"));
  ASSIGN_OR_RETURN(runtime::DeviceTensor recv,
                   runtime::AllocateWorkspaceF32(staging, mm.floats, "shard_gather.recv"));
  PackBlocks(layout.shards.MemberBlocks(layout.member, nt, layout.row_floats), in, send.f32());
  RETURN_IF_ERROR(group->AllGatherV({send.f32(), static_cast<size_t>(send.f32_count())},
                                    {recv.f32(), static_cast<size_t>(recv.f32_count())}, mm.counts,
                                    mm.displs));
  for (int m = 0; m < layout.group_size(); ++m)
    UnpackBlocks(mm.blocks[m], recv.f32() + mm.displs[m], out);
  return Status::Ok();
}

Status ReduceScatterShards(comm::Communicator* group, const ShardGatherLayout& layout,
                           const std::vector<const float*>& in, const std::vector<float*>& out,
                           runtime::DeviceAllocator* mem) {
  RETURN_IF_ERROR(layout.Validate(group));
  RETURN_IF_ERROR(CheckTensors("ReduceScatterShards", in.size(), out.size()));
  const int q = layout.group_size();
  const int nt = static_cast<int>(in.size());
  const int64_t own = layout.member_rows() * layout.row_floats;
  if (q == 1) {
    for (int t = 0; t < nt && own > 0; ++t) std::memcpy(out[t], in[t], sizeof(float) * own);
    return Status::Ok();
  }
  // Send: member-major blocks of the concatenation (the all-gather's receive layout); receive:
  // from every member m its partial sums of this member's rows, (tensor, rows) packed.
  const MemberMajor mm = MemberMajorLayout(layout, nt);
  const std::vector<int64_t> rc(q, nt * own);
  std::vector<int64_t> rd(q);
  for (int m = 0; m < q; ++m) rd[m] = m * nt * own;
  runtime::HeapDeviceAllocator private_heap(0, sizeof(float));
  runtime::DeviceAllocator& staging = mem != nullptr ? *mem : private_heap;
  ASSIGN_OR_RETURN(runtime::DeviceTensor send,
                   runtime::AllocateWorkspaceF32(staging, mm.floats, "shard_gather.send"));
  ASSIGN_OR_RETURN(runtime::DeviceTensor recv,
                   runtime::AllocateWorkspaceF32(staging, q * nt * own, "shard_gather.recv"));
  for (int m = 0; m < q; ++m) PackBlocks(mm.blocks[m], in, send.f32() + mm.displs[m]);
  RETURN_IF_ERROR(group->AllToAllV({send.f32(), static_cast<size_t>(send.f32_count())}, mm.counts,
                                   mm.displs, {recv.f32(), static_cast<size_t>(recv.f32_count())},
                                   rc, rd));
  for (int t = 0; t < nt; ++t) std::fill(out[t], out[t] + own, 0.0f);
  for (int m = 0; m < q; ++m) {  // member order: identical sums on every member
    for (int t = 0; t < nt; ++t) {
      const float* part = recv.f32() + rd[m] + t * own;
      for (int64_t e = 0; e < own; ++e) out[t][e] += part[e];
    }
  }
  return Status::Ok();
}

}  // namespace tessera::parallel
