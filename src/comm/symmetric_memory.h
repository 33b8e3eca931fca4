// SymmetricMemory: one segment of `segment_bytes` per rank of a communicator, every segment
// mapped into every rank and writable by all of them (GPU symmetric memory, emulated on one
// machine). Segment r is rank r's receive area: peers write into it, rank r reads it.
//
// Backends (chosen from the communicator): MPI ranks get an MPI-3 shared window
// (MPI_Win_allocate_shared) over the communicator, which must lie on one machine
// (FailedPrecondition naming the node count otherwise); the in-process backend's ranks are threads
// of one process and share one heap block. Segments start zeroed and 4096-byte aligned.
//
// Collective rules: Create is collective over the communicator; every rank must destroy its
// object too (the MPI window is freed collectively), at the same point of the program, e.g.
// by leaving the scope that created it. Memory ordering between ranks is the caller's
// business (futex.h signals give release/acquire ordering).
// Thread-safety: the object is read-only after Create; the memory itself is shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "comm/communicator.h"

namespace tessera::comm {

class SymmetricMemory {
 public:
  // The largest segment one rank may ask for (the emulator's windows are far smaller).
  static constexpr int64_t kMaxSegmentBytes = int64_t{16} << 30;

  static StatusOr<std::unique_ptr<SymmetricMemory>> Create(Communicator& comm,
                                                           int64_t segment_bytes);
  virtual ~SymmetricMemory();
  SymmetricMemory(const SymmetricMemory&) = delete;
  SymmetricMemory& operator=(const SymmetricMemory&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(segments_.size()); }
  int64_t segment_bytes() const { return segment_bytes_; }
  // Rank r's segment as mapped in this process.
  std::byte* segment(int r) const { return segments_[r]; }
  // "MPI shared window" or "process heap".
  virtual const char* backend() const = 0;

 protected:
  SymmetricMemory(int rank, int64_t segment_bytes) : rank_(rank), segment_bytes_(segment_bytes) {}
  int rank_;
  int64_t segment_bytes_;
  std::vector<std::byte*> segments_;
};

}  // namespace tessera::comm
