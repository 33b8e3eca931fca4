#include "xema/pipeline/trace_player.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace tessera::xema {
namespace {

// The byte pattern of instance k: a cheap hash of (k, position).
uint8_t PatternByte(int64_t k, int64_t i) {
  return static_cast<uint8_t>((k * 0x9E3779B1u + i * 31u + (k >> 7)) & 0xFF);
}

struct Ranges {
  int64_t head = 0;  // bytes [0, head) and [tail, bytes)
  int64_t tail = 0;
};

Ranges RangesOf(int64_t bytes, int64_t check_bytes) {
  if (bytes <= 2 * check_bytes) return {bytes, bytes};
  return {check_bytes, bytes - check_bytes};
}

void Fill(const runtime::DeviceTensor& t, int64_t k, int64_t bytes, int64_t check_bytes) {
  auto* p = static_cast<uint8_t*>(t.data());
  const Ranges r = RangesOf(bytes, check_bytes);
  for (int64_t i = 0; i < r.head; ++i) p[i] = PatternByte(k, i);
  for (int64_t i = r.tail; i < bytes; ++i) p[i] = PatternByte(k, i);
}

bool Intact(const runtime::DeviceTensor& t, int64_t k, int64_t bytes, int64_t check_bytes) {
  const auto* p = static_cast<const uint8_t*>(t.data());
  const Ranges r = RangesOf(bytes, check_bytes);
  for (int64_t i = 0; i < r.head; ++i) {
    if (p[i] != PatternByte(k, i)) return false;
  }
  for (int64_t i = r.tail; i < bytes; ++i) {
    if (p[i] != PatternByte(k, i)) return false;
  }
  return true;
}

}  // namespace

core::Status PlayTrace(const MemoryTrace& trace, const ExpandedTrace& x,
                       runtime::DeviceAllocator& allocator, const PlayOptions& options) {
  const int64_t n = static_cast<int64_t>(x.tensors.size());
  std::vector<runtime::DeviceTensor> live(static_cast<size_t>(n));
  std::vector<std::vector<int64_t>> alloc_at(x.ops.size()), free_at(x.ops.size());
  std::vector<int64_t> weights;
  for (int64_t k = 0; k < n; ++k) {
    const FlatTensor& f = x.tensors[k];
    if (f.kind == TensorKind::kWeight) {
      weights.push_back(k);
    } else {
      alloc_at[f.alloc_op].push_back(k);
      free_at[f.free_op].push_back(k);
    }
  }
  auto allocate = [&](int64_t k) -> core::Status {
    const FlatTensor& f = x.tensors[k];
    ASSIGN_OR_RETURN(live[k], allocator.Allocate(f.bytes, trace.tensors[f.tensor].name, f.kind));
    if (options.check_contents) Fill(live[k], k, f.bytes, options.check_bytes);
    return core::Status::Ok();
  };
  auto release = [&](int64_t k) -> core::Status {
    const FlatTensor& f = x.tensors[k];
    if (options.check_contents && !Intact(live[k], k, f.bytes, options.check_bytes)) {
      return core::FailedPrecondition(fmt::format("instance {} '{}' was overwritten while live", k,
                                                  trace.tensors[f.tensor].name));
    }
    live[k].Reset();
    return core::Status::Ok();
  };
  // Every path out frees what is live (outside ops), so the allocator ends empty.
  struct Cleanup {
    runtime::DeviceAllocator& a;
    std::vector<runtime::DeviceTensor>& live;
    ~Cleanup() {
      if (a.in_op()) a.EndOp();
      for (auto& t : live) t.Reset();
    }
  } cleanup{allocator, live};

  for (int64_t k : weights) RETURN_IF_ERROR(allocate(k));
  for (size_t op = 0; op < x.ops.size(); ++op) {
    const FlatOp& fo = x.ops[op];
    const TraceOp& to = trace.op(fo.template_op);
    allocator.BeginOp({to.name, PhaseName(to.phase), trace.SectionOf(fo.template_op), fo.step});
    for (int64_t k : alloc_at[op]) RETURN_IF_ERROR(allocate(k));
    for (int64_t k : free_at[op]) RETURN_IF_ERROR(release(k));
    allocator.EndOp(to.flops, to.bytes);
  }
  for (int64_t k : weights) RETURN_IF_ERROR(release(k));
  return core::Status::Ok();
}

}  // namespace tessera::xema
