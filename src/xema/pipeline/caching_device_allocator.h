// CachingDeviceAllocator: runs the pipeline under the rules of PyTorch's CUDA caching
// allocator (caching_allocator.h): every allocation and release goes through a
// CachingAllocatorSim, which decides whether the request fits under the device limit
// (reserved segments, not live bytes, count against it: the fragmentation a static layout
// removes) and keeps the reserved / allocated statistics of the run. The bytes themselves come
// from the host heap, one block per tensor: the sim's block addresses are virtual, so this
// allocator reproduces the caching allocator's memory accounting and out-of-memory decisions,
// not its placement in device memory.
//
// Out of memory: Infeasible "out of device memory (caching allocator, pytorch): tensor X needs
// N bytes, reserved R, allocated A, limit L". The base-class budget is not used (the policy's
// device_limit_bytes is the limit).
// Thread-safety: one thread (DeviceAllocator).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "core/status.h"
#include "xema/caching_allocator.h"
#include "xema/pipeline/device_allocator.h"

namespace tessera::xema {

class CachingDeviceAllocator final : public DeviceAllocator {
 public:
  explicit CachingDeviceAllocator(AllocatorPolicy policy);

  std::string name() const override { return "caching:" + PolicyName(policy_); }
  const AllocatorStats& stats() const { return sim_.stats(); }

 protected:
  core::StatusOr<void*> DoAllocate(int64_t id, int64_t aligned, const std::string& name,
                                   TensorKind kind) override;
  void DoRelease(int64_t id, void* data, int64_t aligned) override;

 private:
  AllocatorPolicy policy_;
  CachingAllocatorSim sim_;
  std::unordered_map<int64_t, int> handles_;  // allocation id -> sim handle
};

}  // namespace tessera::xema
