#include "xema/caching_allocator.h"

#include <algorithm>

#include "core/byte_size.h"
#include "core/check.h"
#include "core/parse_number.h"
#include "core/units.h"

namespace tessera::xema {
namespace {

constexpr int64_t kMinBlockSize = 512;
constexpr int64_t kSmallSize = 1 * core::kMiBInt64;
constexpr int64_t kSmallBuffer = 2 * core::kMiBInt64;
constexpr int64_t kLargeBuffer = 20 * core::kMiBInt64;
constexpr int64_t kMinLargeAlloc = 10 * core::kMiBInt64;
constexpr int64_t kRoundLarge = 2 * core::kMiBInt64;
constexpr int64_t kMaxNonSplitRounding = 20 * core::kMiBInt64;
constexpr int64_t kSegmentGap = int64_t{1} << 30;  // address space between segments

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace

core::StatusOr<AllocatorPolicy> ParseAllocatorPolicy(const std::string& text) {
  const std::string grammar =
      "must be pytorch[:expandable_segments][,max_split_size_mb=N] (N an integer > 20)";
  auto bad = [&](const std::string& why) {
    return core::InvalidArgument("policy: got '" + text + "', " + why + "; " + grammar);
  };
  if (text.rfind("pytorch", 0) != 0) return bad("unknown allocator");
  std::vector<std::string> tokens;
  std::string cur;
  for (char c : text.substr(7)) {
    if (c == ':' || c == ',') {
      tokens.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  tokens.push_back(cur);
  if (tokens.size() == 1 && !tokens[0].empty()) return bad("unknown allocator");
  AllocatorPolicy p;
  // tokens[0] is what came before the first separator (empty).
  for (size_t i = 1; i < tokens.size(); ++i) {
    std::string t = tokens[i];
    std::string value;
    const size_t eq = t.find('=');
    if (eq != std::string::npos) {
      value = t.substr(eq + 1);
      t = t.substr(0, eq);
    }
    const bool has_next = i + 1 < tokens.size();
    if (t == "expandable_segments") {
      if (value.empty() && has_next && (tokens[i + 1] == "True" || tokens[i + 1] == "False")) {
        value = tokens[++i];
      }
      if (!value.empty() && value != "True" && value != "False") {
        return bad("expandable_segments takes True or False, got '" + value + "'");
      }
      p.expandable_segments = value != "False";
    } else if (t == "max_split_size_mb") {
      if (value.empty() && has_next) value = tokens[++i];
      auto mb = core::ParseInteger(value, 21, int64_t{1} << 20);
      if (!mb.ok()) return bad("max_split_size_mb: " + mb.status().message());
      p.max_split_size_bytes = *mb * core::kMiBInt64;
    } else {
      return bad("unknown option '" + tokens[i] + "'");
    }
  }
  return p;
}

std::string PolicyName(const AllocatorPolicy& p) {
  std::string s = "pytorch";
  if (p.expandable_segments) s += ":expandable_segments";
  if (p.max_split_size_bytes != kNoMaxSplit) {
    s += ",max_split_size_mb=" + std::to_string(p.max_split_size_bytes / core::kMiBInt64);
  }
  return s;
}

double AllocatorStats::Fragmentation() const {
  if (peak_reserved_bytes == 0) return 0.0;
  return 1.0 - static_cast<double>(allocated_at_peak_reserved_bytes) /
                   static_cast<double>(peak_reserved_bytes);
}

core::Json ToJson(const AllocatorStats& s) {
  return core::Json{{"peak_allocated_bytes", s.peak_allocated_bytes},
                    {"peak_reserved_bytes", s.peak_reserved_bytes},
                    {"allocated_at_peak_reserved_bytes", s.allocated_at_peak_reserved_bytes},
                    {"fragmentation", s.Fragmentation()},
                    {"segments_at_peak_reserved", s.segments_at_peak_reserved},
                    {"segments_created", s.segments_created},
                    {"cache_flushes", s.cache_flushes}};
}

CachingAllocatorSim::CachingAllocatorSim(AllocatorPolicy policy) : policy_(policy) {}

void CachingAllocatorSim::Insert(int b) {
  const Block& k = blocks_[b];
  Pool(segments_[k.segment].small).insert({k.size, k.addr, b});
}

void CachingAllocatorSim::Erase(int b) {
  const Block& k = blocks_[b];
  Pool(segments_[k.segment].small).erase({k.size, k.addr, b});
}

int CachingAllocatorSim::FindFree(int64_t size, bool small) const {
  const std::set<PoolKey>& pool = small ? small_pool_ : large_pool_;
  auto it = pool.lower_bound({size, INT64_MIN, -1});
  if (it == pool.end()) return -1;
  const int64_t block_size = std::get<0>(*it);
  const int64_t max_split = policy_.max_split_size_bytes;
  // Do not hand an oversize block to a smaller request, nor one much larger than the request.
  if (size < max_split && block_size >= max_split) return -1;
  if (size >= max_split && block_size >= size + kMaxNonSplitRounding) return -1;
  return std::get<2>(*it);
}

int CachingAllocatorSim::NewBlock(const Block& b) {
  if (dead_blocks_.empty()) {
    blocks_.push_back(b);
    return static_cast<int>(blocks_.size()) - 1;
  }
  const int id = dead_blocks_.back();
  dead_blocks_.pop_back();
  blocks_[id] = b;
  return id;
}

void CachingAllocatorSim::DeadBlock(int id) {
  blocks_[id] = Block{};
  dead_blocks_.push_back(id);
}

CachingAllocatorSim::Placement CachingAllocatorSim::PlacementOf(int handle) const {
  CHECK(handle >= 0 && handle < static_cast<int>(blocks_.size()) && blocks_[handle].allocated)
      << "PlacementOf a handle that is not live: " << handle;
  const Block& b = blocks_[handle];
  return {b.segment, b.addr - segments_[b.segment].base};
}

CachingAllocatorSim::SegmentInfo CachingAllocatorSim::SegmentOf(int segment) const {
  CHECK(segment >= 0 && segment < static_cast<int>(segments_.size())) << segment;
  const Segment& s = segments_[segment];
  return {s.alive ? s.size : 0, s.expandable};
}

int CachingAllocatorSim::NewSegment(int64_t size, bool small) {
  const int64_t alloc =
      small ? kSmallBuffer : (size < kMinLargeAlloc ? kLargeBuffer : RoundUp(size, kRoundLarge));
  if (policy_.device_limit_bytes > 0 && stats_.reserved_bytes + alloc > policy_.device_limit_bytes)
    return -1;
  Segment s;
  s.small = small;
  s.size = alloc;
  s.base = next_addr_;
  Block b;
  b.addr = next_addr_;
  b.size = alloc;
  b.segment = static_cast<int>(segments_.size());
  next_addr_ += RoundUp(alloc, kSegmentGap) + kSegmentGap;
  s.first = s.last = NewBlock(b);
  segments_.push_back(s);
  Insert(s.first);
  stats_.reserved_bytes += alloc;
  ++stats_.segments;
  ++stats_.segments_created;
  return s.first;
}

int CachingAllocatorSim::Expand(int64_t size, bool small) {
  const int64_t page = small ? kSmallBuffer : kLargeBuffer;
  int& seg_index = expandable_[small ? 1 : 0];
  if (seg_index < 0) {
    Segment s;
    s.small = small;
    s.expandable = true;
    s.base = static_cast<int64_t>(segments_.size() + 1) * (int64_t{1} << 50);
    segments_.push_back(s);
    seg_index = static_cast<int>(segments_.size()) - 1;
    ++stats_.segments;
  }
  Segment& seg = segments_[seg_index];
  const int tail = seg.last;
  const bool tail_free = tail >= 0 && !blocks_[tail].allocated;
  const int64_t have = tail_free ? blocks_[tail].size : 0;
  const int64_t add = RoundUp(size - have, page);
  if (policy_.device_limit_bytes > 0 && stats_.reserved_bytes + add > policy_.device_limit_bytes)
    return -1;
  int grown = tail;
  if (tail_free) {
    Erase(tail);
    blocks_[tail].size += add;
    Insert(tail);
  } else {
    Block b;
    b.addr = seg.base + seg.size;  // one address range per pool
    b.size = add;
    b.segment = seg_index;
    b.prev = tail;
    const int id = NewBlock(b);
    if (tail >= 0) blocks_[tail].next = id;
    if (seg.first < 0) seg.first = id;
    seg.last = id;
    Insert(id);
    grown = id;
  }
  seg.size += add;
  stats_.reserved_bytes += add;
  ++stats_.segments_created;
  return grown;
}

void CachingAllocatorSim::ReleaseOversize(int64_t size) {
  // PyTorch's release_available_cached_blocks: only when max_split_size is set.
  if (policy_.max_split_size_bytes == kNoMaxSplit || policy_.expandable_segments) return;
  std::vector<int> oversize;  // unsplit free blocks >= max_split_size, by size
  for (const PoolKey& k : large_pool_) {
    const Block& b = blocks_[std::get<2>(k)];
    if (b.size >= policy_.max_split_size_bytes && b.prev < 0 && b.next < 0)
      oversize.push_back(std::get<2>(k));
  }
  auto release = [&](int id) {
    Block& b = blocks_[id];
    Erase(id);
    segments_[b.segment].alive = false;
    segments_[b.segment].size = 0;
    stats_.reserved_bytes -= b.size;
    --stats_.segments;
    DeadBlock(id);
  };
  for (int id : oversize) {
    if (blocks_[id].size >= size) {
      release(id);
      return;
    }
  }
  int64_t freed = 0;
  for (auto it = oversize.rbegin(); it != oversize.rend() && freed < size; ++it) {
    freed += blocks_[*it].size;
    release(*it);
  }
}

void CachingAllocatorSim::ReleaseCached() {
  ++stats_.cache_flushes;
  for (std::set<PoolKey>* pool : {&small_pool_, &large_pool_}) {
    std::vector<int> ids;
    for (const PoolKey& k : *pool) ids.push_back(std::get<2>(k));
    for (int id : ids) {
      Block& b = blocks_[id];
      Segment& seg = segments_[b.segment];
      if (seg.expandable) {
        if (seg.last != id) continue;
        // Unmap the whole free pages at the tail.
        const int64_t page = seg.small ? kSmallBuffer : kLargeBuffer;
        const int64_t cut = b.size / page * page;
        if (cut == 0) continue;
        Erase(id);
        b.size -= cut;
        seg.size -= cut;
        stats_.reserved_bytes -= cut;
        if (b.size > 0) {
          Insert(id);
        } else {
          seg.last = b.prev;
          if (b.prev >= 0) blocks_[b.prev].next = -1;
          if (seg.first == id) seg.first = -1;
          DeadBlock(id);
        }
        continue;
      }
      if (b.prev >= 0 || b.next >= 0) continue;  // split: part of it is in use
      Erase(id);
      seg.alive = false;
      stats_.reserved_bytes -= b.size;
      seg.size = 0;
      --stats_.segments;
      DeadBlock(id);
    }
  }
}

void CachingAllocatorSim::UpdatePeaks() {
  AllocatorStats& s = stats_;
  s.peak_allocated_bytes = std::max(s.peak_allocated_bytes, s.allocated_bytes);
  if (s.reserved_bytes > s.peak_reserved_bytes) {
    s.peak_reserved_bytes = s.reserved_bytes;
    s.allocated_at_peak_reserved_bytes = s.allocated_bytes;
    s.segments_at_peak_reserved = s.segments;
  } else if (s.reserved_bytes == s.peak_reserved_bytes) {
    s.allocated_at_peak_reserved_bytes =
        std::max(s.allocated_at_peak_reserved_bytes, s.allocated_bytes);
  }
}

core::StatusOr<int> CachingAllocatorSim::Malloc(int64_t bytes) {
  CHECK(bytes >= 1 && bytes <= kMaxTensorBytes) << bytes;
  const int64_t size = std::max(kMinBlockSize, RoundUp(bytes, kMinBlockSize));
  const bool small = size <= kSmallSize;
  int b = FindFree(size, small);
  if (b < 0) {
    auto grow = [&] {
      return policy_.expandable_segments ? Expand(size, small) : NewSegment(size, small);
    };
    // The new (or grown) block serves the request directly, as in PyTorch.
    b = grow();
    if (b < 0) {
      ReleaseOversize(size);
      b = grow();
    }
    if (b < 0) {
      ReleaseCached();
      b = grow();
    }
    if (b < 0) {
      return core::Infeasible("out of memory: tried to allocate " + core::FormatBytes(size) +
                              " with " + core::FormatBytes(stats_.reserved_bytes) + " reserved (" +
                              core::FormatBytes(stats_.allocated_bytes) +
                              " allocated) under the device limit of " +
                              core::FormatBytes(policy_.device_limit_bytes));
    }
    CHECK(blocks_[b].size >= size) << "a fresh segment must serve the request";
  }
  Erase(b);
  const int64_t rest = blocks_[b].size - size;
  const bool split =
      small ? rest >= kMinBlockSize : (size < policy_.max_split_size_bytes && rest > kSmallSize);
  if (split) {
    Block r;
    r.addr = blocks_[b].addr + size;
    r.size = rest;
    r.segment = blocks_[b].segment;
    r.prev = b;
    r.next = blocks_[b].next;
    const int id = NewBlock(r);
    if (r.next >= 0) blocks_[r.next].prev = id;
    blocks_[b].next = id;
    blocks_[b].size = size;
    Segment& seg = segments_[r.segment];
    if (seg.last == b) seg.last = id;
    Insert(id);
  }
  Block& k = blocks_[b];
  k.allocated = true;
  k.requested = bytes;
  stats_.allocated_bytes += k.size;
  stats_.requested_bytes += bytes;
  UpdatePeaks();
  return b;
}

void CachingAllocatorSim::Free(int handle) {
  CHECK(handle >= 0 && handle < static_cast<int>(blocks_.size()) && blocks_[handle].allocated)
      << "Free of a handle that is not live: " << handle;
  Block& b = blocks_[handle];
  b.allocated = false;
  stats_.allocated_bytes -= b.size;
  stats_.requested_bytes -= b.requested;
  Segment& seg = segments_[b.segment];
  // Merge with free neighbours of the same segment.
  if (b.prev >= 0 && !blocks_[b.prev].allocated) {
    const int p = b.prev;
    Erase(p);
    b.addr = blocks_[p].addr;
    b.size += blocks_[p].size;
    b.prev = blocks_[p].prev;
    if (b.prev >= 0) blocks_[b.prev].next = handle;
    if (seg.first == p) seg.first = handle;
    DeadBlock(p);
  }
  if (b.next >= 0 && !blocks_[b.next].allocated) {
    const int n = b.next;
    Erase(n);
    b.size += blocks_[n].size;
    b.next = blocks_[n].next;
    if (b.next >= 0) blocks_[b.next].prev = handle;
    if (seg.last == n) seg.last = handle;
    DeadBlock(n);
  }
  Insert(handle);
}

ReplayReport ReplayTrace(const ExpandedTrace& x, const AllocatorPolicy& policy) {
  ReplayReport r;
  CachingAllocatorSim sim(policy);
  std::vector<std::vector<int>> frees(x.ops.size());
  for (size_t i = 0; i < x.tensors.size(); ++i)
    frees[x.tensors[i].free_op].push_back(static_cast<int>(i));
  std::vector<int> handle(x.tensors.size(), -1);
  size_t next = 0;
  for (int t = 0; t < static_cast<int>(x.ops.size()); ++t) {
    for (; next < x.tensors.size() && x.tensors[next].alloc_op == t; ++next) {
      auto h = sim.Malloc(x.tensors[next].bytes);
      if (!h.ok()) {
        r.oom = true;
        r.oom_op = t;
        r.oom_message = h.status().message();
        r.stats = sim.stats();
        return r;
      }
      handle[next] = *h;
    }
    for (int i : frees[t]) sim.Free(handle[i]);
  }
  r.stats = sim.stats();
  return r;
}

}  // namespace tessera::xema
