// SequenceShards and strided blocks; see sequence_shards.h.
#include "parallel/sequence_shards.h"

#include <cstring>
#include <string>

namespace tessera::parallel {

int64_t BlockFloats(std::span<const StridedBlock> blocks) {
  int64_t n = 0;
  for (const StridedBlock& b : blocks) n += b.floats();
  return n;
}

void PackBlocks(std::span<const StridedBlock> blocks, std::span<const float* const> tensors,
                float* buffer) {
  ForEachBlockRun(blocks, [&](int t, int64_t offset, int64_t pos, int64_t floats) {
    if (floats > 0) std::memcpy(buffer + pos, tensors[t] + offset, sizeof(float) * floats);
  });
}

void UnpackBlocks(std::span<const StridedBlock> blocks, const float* buffer,
                  std::span<float* const> tensors) {
  ForEachBlockRun(blocks, [&](int t, int64_t offset, int64_t pos, int64_t floats) {
    if (floats > 0) std::memcpy(tensors[t] + offset, buffer + pos, sizeof(float) * floats);
  });
}

int64_t SequenceShards::MemberRows(int m) const {
  int64_t n = 0;
  for (int64_t r : rows[m]) n += r;
  return n;
}

int64_t SequenceShards::SequenceRows(int s) const {
  int64_t n = 0;
  for (const auto& member_rows : rows) n += member_rows[s];
  return n;
}

int64_t SequenceShards::TotalRows() const {
  int64_t n = 0;
  for (int m = 0; m < members(); ++m) n += MemberRows(m);
  return n;
}

std::vector<int64_t> SequenceShards::CuSeqlens() const {
  std::vector<int64_t> cu{0};
  for (int s = 0; s < sequences(); ++s) cu.push_back(cu.back() + SequenceRows(s));
  return cu;
}

int64_t SequenceShards::ConcatRow(int m, int s) const {
  int64_t row = 0;
  for (int x = 0; x < s; ++x) row += SequenceRows(x);
  for (int x = 0; x < m; ++x) row += rows[x][s];
  return row;
}

std::vector<StridedBlock> SequenceShards::ConcatBlocks(int m, int num_tensors,
                                                       int64_t row_floats) const {
  std::vector<StridedBlock> blocks;
  for (int t = 0; t < num_tensors; ++t)
    for (int s = 0; s < sequences(); ++s) {
      blocks.push_back({.tensor = t,
                        .offset = ConcatRow(m, s) * row_floats,
                        .rows = rows[m][s],
                        .row_floats = row_floats,
                        .row_stride = row_floats});
    }
  return blocks;
}

std::vector<StridedBlock> SequenceShards::MemberBlocks(int m, int num_tensors,
                                                       int64_t row_floats) const {
  std::vector<StridedBlock> blocks;
  for (int t = 0; t < num_tensors; ++t) {
    blocks.push_back({.tensor = t,
                      .offset = 0,
                      .rows = MemberRows(m),
                      .row_floats = row_floats,
                      .row_stride = row_floats});
  }
  return blocks;
}

core::Status SequenceShards::Validate(const char* what) const {
  if (rows.empty()) return core::InvalidArgument(std::string(what) + ": no members");
  for (int m = 0; m < members(); ++m) {
    if (static_cast<int>(rows[m].size()) != sequences()) {
      return core::InvalidArgument(std::string(what) + ": member " + std::to_string(m) + " has " +
                                   std::to_string(rows[m].size()) + " sequences, member 0 has " +
                                   std::to_string(sequences()) + "; they must be equal");
    }
    for (int s = 0; s < sequences(); ++s) {
      if (rows[m][s] < 0) {
        return core::InvalidArgument(std::string(what) + ": rows[" + std::to_string(m) + "][" +
                                     std::to_string(s) + "] = " + std::to_string(rows[m][s]) +
                                     ", must be >= 0");
      }
    }
  }
  return core::Status::Ok();
}

core::Status ValidateGroupMember(const char* what, const SequenceShards& shards, int member,
                                 const comm::Communicator* group) {
  RETURN_IF_ERROR(shards.Validate((std::string(what) + ".shards").c_str()));
  const int n = shards.members();
  if (member < 0 || member >= n) {
    return core::InvalidArgument(std::string(what) + ".member = " + std::to_string(member) +
                                 ", must be in [0, " + std::to_string(n) + ")");
  }
  if (n > 1 && (group == nullptr || group->size() != n || group->rank() != member)) {
    return core::InvalidArgument(
        std::string(what) + ": need a group communicator of " + std::to_string(n) +
        " ranks with rank " + std::to_string(member) + ", got " +
        (group == nullptr
             ? std::string("none")
             : std::to_string(group->size()) + " ranks, rank " + std::to_string(group->rank())));
  }
  return core::Status::Ok();
}

}  // namespace tessera::parallel
