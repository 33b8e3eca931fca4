#include "xema/pipeline/caching_device_allocator.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstring>

#include "core/check.h"

namespace tessera::xema {

CachingDeviceAllocator::CachingDeviceAllocator(AllocatorPolicy policy)
    : runtime::DeviceAllocator(0), policy_(policy), sim_(policy) {}

CachingDeviceAllocator::~CachingDeviceAllocator() {
  for (Backing& b : backings_) {
    const int64_t bytes = b.reserved > 0 ? b.reserved : b.mapped;
    if (b.data != nullptr) munmap(b.data, static_cast<size_t>(bytes));
  }
}

core::Status CachingDeviceAllocator::SyncSegments() {
  backings_.resize(static_cast<size_t>(sim_.segment_count()));
  for (int i = 0; i < sim_.segment_count(); ++i) {
    const CachingAllocatorSim::SegmentInfo seg = sim_.SegmentOf(i);
    Backing& b = backings_[static_cast<size_t>(i)];
    if (seg.bytes == b.mapped) continue;
    if (!seg.expandable) {
      if (b.data != nullptr) {  // released by the sim (segments never change size)
        munmap(b.data, static_cast<size_t>(b.mapped));
        b = Backing{};
      }
      if (seg.bytes > 0) {
        void* p = mmap(nullptr, static_cast<size_t>(seg.bytes), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED) {
          return core::Infeasible(
              fmt::format("out of host memory: mapping a segment of {} bytes", seg.bytes));
        }
        b.data = static_cast<char*>(p);
        b.mapped = seg.bytes;
      }
      continue;
    }
    if (b.data == nullptr) {
      b.reserved =
          policy_.device_limit_bytes > 0 ? policy_.device_limit_bytes : kExpandableReserveBytes;
      void* p = mmap(nullptr, static_cast<size_t>(b.reserved), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) {
        return core::Infeasible(fmt::format(
            "out of host memory: reserving {} bytes of addresses for an expandable segment",
            b.reserved));
      }
      b.data = static_cast<char*>(p);
    }
    if (seg.bytes > b.reserved) {
      return core::Infeasible(fmt::format(
          "out of host memory: an expandable segment of {} bytes exceeds its reservation of {}",
          seg.bytes, b.reserved));
    }
    if (seg.bytes > b.mapped) {
      std::memset(b.data + b.mapped, 0, static_cast<size_t>(seg.bytes - b.mapped));  // touch
    } else {
      madvise(b.data + seg.bytes, static_cast<size_t>(b.mapped - seg.bytes), MADV_DONTNEED);
    }
    b.mapped = seg.bytes;
  }
  return core::Status::Ok();
}

core::StatusOr<void*> CachingDeviceAllocator::DoAllocate(int64_t id, int64_t aligned,
                                                         const std::string& name,
                                                         TensorKind /*kind*/) {
  auto handle = sim_.Malloc(aligned);
  if (!handle.ok()) {
    const AllocatorStats& s = sim_.stats();
    return core::Infeasible(fmt::format(
        "out of device memory (caching allocator, {}): tensor {} needs {} bytes, reserved {}, "
        "allocated {}, limit {}",
        PolicyName(policy_), name, aligned, s.reserved_bytes, s.allocated_bytes,
        policy_.device_limit_bytes));
  }
  const core::Status synced = SyncSegments();
  const CachingAllocatorSim::Placement at = sim_.PlacementOf(*handle);
  const Backing& b = backings_[static_cast<size_t>(at.segment)];
  if (!synced.ok() || b.data == nullptr || at.offset + aligned > b.mapped) {
    sim_.Free(*handle);
    if (!synced.ok()) return synced.WithPrefix("tensor " + name);
    return core::Infeasible(
        fmt::format("out of host memory: tensor {} needs {} bytes", name, aligned));
  }
  handles_.emplace(id, *handle);
  return b.data + at.offset;
}

void CachingDeviceAllocator::DoRelease(int64_t id, void* /*data*/, int64_t /*aligned*/) {
  auto it = handles_.find(id);
  CHECK(it != handles_.end());
  sim_.Free(it->second);  // the block returns to the cache; its segment stays mapped
  handles_.erase(it);
}

}  // namespace tessera::xema
