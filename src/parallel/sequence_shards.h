// SequenceShards: how a group of members splits a batch of sequences by rows. Each of the
// `members()` members owns, of every sequence s, one contiguous run of rows[m][s] rows (zero
// allowed); the runs of a sequence follow each other in member order. The "concatenation" is
// the sequence-major layout of all of it: sequence 0 (member 0's rows, member 1's rows, ...),
// then sequence 1, ..., i.e. (TotalRows(), row_floats) with cumulative offsets CuSeqlens().
//
// StridedBlock names `rows` rows of `row_floats` floats of one tensor, `row_stride` floats
// apart; a list of blocks describes how one side of a collective's buffer maps onto tensors,
// and ForEachBlockRun walks it in buffer order, so that packing a send buffer and unpacking a
// receive buffer are the same walk in opposite directions (PackBlocks / UnpackBlocks).
//
// Units: rows (tokens) and floats (fp32 elements), never bytes. Value types; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"

namespace tessera::parallel {

// `rows` rows of `row_floats` floats of tensor `tensor`, the first at float `offset`, the
// next `row_stride` floats further on.
struct StridedBlock {
  int tensor = 0;
  int64_t offset = 0;
  int64_t rows = 0;
  int64_t row_floats = 0;
  int64_t row_stride = 0;
  int64_t floats() const { return rows * row_floats; }
};

// Calls run(tensor, tensor_offset, buffer_offset, floats) for every contiguous run of the
// blocks, in order, buffer_offset counting from 0 in floats (a block whose row_stride equals
// its row_floats is one run).
template <typename Run>
void ForEachBlockRun(std::span<const StridedBlock> blocks, Run&& run) {
  int64_t pos = 0;
  for (const StridedBlock& b : blocks) {
    if (b.row_stride == b.row_floats || b.rows <= 1) {
      run(b.tensor, b.offset, pos, b.floats());
      pos += b.floats();
      continue;
    }
    for (int64_t r = 0; r < b.rows; ++r, pos += b.row_floats)
      run(b.tensor, b.offset + r * b.row_stride, pos, b.row_floats);
  }
}

// The total number of floats of the blocks.
int64_t BlockFloats(std::span<const StridedBlock> blocks);

// buffer[0 .. BlockFloats) <- the blocks of `tensors`, in block order.
void PackBlocks(std::span<const StridedBlock> blocks, std::span<const float* const> tensors,
                float* buffer);
// The blocks of `tensors` <- buffer[0 .. BlockFloats), in block order (inverse of PackBlocks).
void UnpackBlocks(std::span<const StridedBlock> blocks, const float* buffer,
                  std::span<float* const> tensors);

struct SequenceShards {
  // rows[m][s]: rows of sequence s owned by member m; every rows[m] has sequences() entries.
  std::vector<std::vector<int64_t>> rows;

  int members() const { return static_cast<int>(rows.size()); }
  int sequences() const { return rows.empty() ? 0 : static_cast<int>(rows[0].size()); }
  // Rows of member m over all sequences.
  int64_t MemberRows(int m) const;
  // Rows of sequence s over all members.
  int64_t SequenceRows(int s) const;
  int64_t TotalRows() const;
  // Exclusive prefix sums of SequenceRows: sequences() + 1 entries, from 0 to TotalRows().
  std::vector<int64_t> CuSeqlens() const;
  // Row of member m's first row of sequence s in the concatenation.
  int64_t ConcatRow(int m, int s) const;
  // Member m's rows in `num_tensors` concatenations, each (TotalRows(), row_floats), in the
  // order (tensor, sequence): the block of member m in a member-major buffer.
  std::vector<StridedBlock> ConcatBlocks(int m, int num_tensors, int64_t row_floats) const;
  // Member m's rows in `num_tensors` packed member tensors, each (MemberRows(m), row_floats)
  // with sequences in order: one contiguous block per tensor.
  std::vector<StridedBlock> MemberBlocks(int m, int num_tensors, int64_t row_floats) const;

  // At least one member, every member with the same number of sequences, no negative count;
  // `what` prefixes the message.
  core::Status Validate(const char* what) const;
};

// The group side of a layout over `shards`: consistent shards, 0 <= member < members(), and
// with more than one member a `group` of members() ranks whose rank is `member` (a single
// member needs no communicator). `what` names the layout in messages, e.g. "UlyssesLayout".
core::Status ValidateGroupMember(const char* what, const SequenceShards& shards, int member,
                                 const comm::Communicator* group);

}  // namespace tessera::parallel
