#include "xema/pipeline/caching_device_allocator.h"

#include <fmt/format.h>

#include <cstdlib>

#include "core/check.h"

namespace tessera::xema {

CachingDeviceAllocator::CachingDeviceAllocator(AllocatorPolicy policy)
    : DeviceAllocator(0), policy_(policy), sim_(policy) {}

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
  void* p = std::aligned_alloc(64, static_cast<size_t>(aligned));
  if (p == nullptr) {
    sim_.Free(*handle);
    return core::Infeasible(
        fmt::format("out of host memory: tensor {} needs {} bytes", name, aligned));
  }
  handles_.emplace(id, *handle);
  return p;
}

void CachingDeviceAllocator::DoRelease(int64_t id, void* data, int64_t /*aligned*/) {
  auto it = handles_.find(id);
  CHECK(it != handles_.end());
  sim_.Free(it->second);
  handles_.erase(it);
  std::free(data);
}

}  // namespace tessera::xema
