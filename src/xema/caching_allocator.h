// CachingAllocatorSim: a replay of PyTorch's CUDA caching allocator
// (c10/cuda/CUDACachingAllocator.cpp) on an alloc/free sequence, to show what a trace costs
// under the default allocator: reserved (cudaMalloc'ed) versus allocated bytes, and so the
// fragmentation a static layout removes. One stream, no graphs, no garbage-collection
// threshold. The rules, as replayed:
//   - a request is rounded up to a multiple of 512 B (at least 512 B);
//   - requests <= 1 MiB use the small pool, larger ones the large pool;
//   - best fit: the smallest free block of the request's pool with size >= the request,
//     ties by lowest address (segments get increasing addresses in creation order);
//   - a free block >= max_split_size serves only requests >= max_split_size, and those only
//     if the block is < request + max_non_split_rounding (20 MiB);
//   - a block serving a request is split when the rest is >= 512 B (small pool) or, in the
//     large pool, when the request is < max_split_size and the rest is > 1 MiB; the request
//     takes the lower part. allocated bytes count whole blocks (PyTorch's allocated_bytes);
//   - on a miss a new segment is allocated: 2 MiB for the small pool, 20 MiB for requests of
//     1-10 MiB, else the request rounded up to 2 MiB;
//   - if that would exceed device_limit_bytes (0 = no limit): first (only with
//     max_split_size set) free cached unsplit blocks >= max_split_size (the smallest one
//     large enough, else largest first until the request is covered), retry; then free every
//     cached unsplit segment (a free block that is a whole segment), retry; then OOM;
//   - free marks the block free and merges it with free neighbours in the same segment.
// expandable_segments: each pool has one segment that grows at its end in pages of 2 MiB
// (small) or 20 MiB (large): a miss maps ceil((request - free tail) / page) pages and the
// free tail block grows. Under a device limit the flush unmaps only whole free pages at the
// tail of each pool's segment (PyTorch can also unmap free pages in the middle; not replayed).
// Thread-safety: a CachingAllocatorSim is used by one thread; free functions are reentrant.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/memory_trace.h"

namespace tessera::xema {

inline constexpr int64_t kNoMaxSplit = std::numeric_limits<int64_t>::max();

struct AllocatorPolicy {
  bool expandable_segments = false;
  int64_t max_split_size_bytes = kNoMaxSplit;  // PyTorch's default: unlimited
  int64_t device_limit_bytes = 0;              // 0: reserved memory is not limited
};

// "pytorch", "pytorch:expandable_segments", "pytorch,max_split_size_mb=64",
// "pytorch:expandable_segments,max_split_size_mb=64". PyTorch's own spellings
// (expandable_segments:True, max_split_size_mb:64) are accepted too. max_split_size_mb must
// be an integer in (20, 1048576]. Errors name the text and the grammar.
core::StatusOr<AllocatorPolicy> ParseAllocatorPolicy(const std::string& text);
// The canonical form of `policy` (without the device limit).
std::string PolicyName(const AllocatorPolicy& policy);

struct AllocatorStats {
  int64_t allocated_bytes = 0;  // now, whole blocks
  int64_t reserved_bytes = 0;   // now, segments (mapped pages)
  int64_t requested_bytes = 0;  // now, as requested (before rounding)
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  // The most bytes allocated while reserved stood at its peak.
  int64_t allocated_at_peak_reserved_bytes = 0;
  int segments = 0;  // live now
  int segments_at_peak_reserved = 0;
  int segments_created = 0;  // cudaMalloc calls (or expansions with expandable segments)
  int cache_flushes = 0;     // times cached segments were freed to fit under the limit
  // 1 - allocated / reserved at the peak-reserved moment (0 when nothing was reserved).
  double Fragmentation() const;
};

class CachingAllocatorSim {
 public:
  explicit CachingAllocatorSim(AllocatorPolicy policy);

  // A handle for Free, or Infeasible ("out of memory: ...") when the device limit is hit.
  // bytes must be in [1, kMaxTensorBytes] (CHECKed).
  core::StatusOr<int> Malloc(int64_t bytes);
  // `handle` must be live (CHECKed).
  void Free(int handle);
  const AllocatorStats& stats() const { return stats_; }

  // Where the memory of a live `handle` lies, for an allocator that backs the simulated
  // segments with real memory: its segment (numbered from 0 in order of creation) and its byte
  // offset in that segment. CHECKs that the handle is live.
  struct Placement {
    int segment = -1;
    int64_t offset = 0;
  };
  Placement PlacementOf(int handle) const;
  // A segment's reserved bytes now (0 once released; an expandable segment grows and shrinks
  // at its tail, its blocks keep their offsets) and whether it is expandable.
  struct SegmentInfo {
    int64_t bytes = 0;
    bool expandable = false;
  };
  SegmentInfo SegmentOf(int segment) const;
  int segment_count() const { return static_cast<int>(segments_.size()); }
  // Block records held (live, cached and recycled slots): bounded by the most blocks ever
  // split at once, not by the number of calls.
  int block_slots() const { return static_cast<int>(blocks_.size()); }

 private:
  struct Block {
    int64_t addr = 0, size = 0, requested = 0;
    int segment = 0;
    int prev = -1, next = -1;
    bool allocated = false;
  };
  struct Segment {
    bool small = false, expandable = false, alive = true;
    int64_t size = 0;
    int64_t base = 0;  // simulated address of the segment's first byte
    int first = -1;    // first block (by address)
    int last = -1;     // last block (by address)
  };
  using PoolKey = std::tuple<int64_t, int64_t, int>;  // (size, addr, block)

  std::set<PoolKey>& Pool(bool small) { return small ? small_pool_ : large_pool_; }
  int FindFree(int64_t size, bool small) const;
  // The block that serves `size` (a new segment, or the grown tail of the pool's expandable
  // segment), or -1 when that would exceed the device limit.
  int NewSegment(int64_t size, bool small);
  int Expand(int64_t size, bool small);
  void ReleaseOversize(int64_t size);
  void ReleaseCached();
  // Block slots are reused: a merged or released block's slot serves the next new block, so
  // a long-running allocator does not grow.
  int NewBlock(const Block& b);
  void DeadBlock(int id);
  void Insert(int b);
  void Erase(int b);
  void UpdatePeaks();

  AllocatorPolicy policy_;
  AllocatorStats stats_;
  std::vector<Block> blocks_;
  std::vector<int> dead_blocks_;
  std::vector<Segment> segments_;
  std::set<PoolKey> small_pool_, large_pool_;
  int64_t next_addr_ = int64_t{1} << 40;
  int expandable_[2] = {-1, -1};  // segment per pool: [0] large, [1] small
};

// {"peak_allocated_bytes", "peak_reserved_bytes", "allocated_at_peak_reserved_bytes",
//  "fragmentation", "segments_at_peak_reserved", "segments_created", "cache_flushes"}
core::Json ToJson(const AllocatorStats& stats);

struct ReplayReport {
  AllocatorStats stats;
  bool oom = false;
  int oom_op = -1;  // flat op of the failed allocation
  std::string oom_message;
};

// Replays the allocations and frees of `x`: at each flat op, the instances allocated there
// (in ExpandedTrace order), then those freed there; weights are allocated at op 0 and freed
// after the last op. Stops at the first OOM.
ReplayReport ReplayTrace(const ExpandedTrace& x, const AllocatorPolicy& policy);

}  // namespace tessera::xema
