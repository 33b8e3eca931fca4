// CachingDeviceAllocator: runs the pipeline under the rules of PyTorch's CUDA caching
// allocator (caching_allocator.h): every allocation and release goes through a
// CachingAllocatorSim, which decides whether the request fits under the device limit
// (reserved segments, not live bytes, count against it: the fragmentation a static layout
// removes) and keeps the reserved / allocated statistics of the run. The bytes themselves come
// from the host heap, one block per tensor: the sim's block addresses are virtual, so this
// allocator reproduces the caching allocator's memory accounting and out-of-memory decisions.
// The bytes are real segments, as on a GPU: a segment is mapped (and touched) when the sim
// creates it, a cudaMalloc, and unmapped when the sim releases it (a flush under the limit),
// a cudaFree; a tensor lives at its block's offset in its segment, so reusing cached memory
// costs nothing, as it costs nothing on a device. An expandable segment is one reservation of
// address space (the device limit, else kExpandableReserveBytes) whose tail is touched as it
// grows and handed back as it shrinks.
//
// Out of memory: Infeasible "out of device memory (caching allocator, pytorch): tensor X needs
// N bytes, reserved R, allocated A, limit L". The base-class budget is not used (the policy's
// device_limit_bytes is the limit).
// Thread-safety: one thread (runtime::DeviceAllocator).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "runtime/device_allocator.h"
#include "xema/caching_allocator.h"

namespace tessera::xema {

class CachingDeviceAllocator final : public runtime::DeviceAllocator {
 public:
  static constexpr int64_t kExpandableReserveBytes = int64_t{1} << 34;  // 16 GiB of addresses

  explicit CachingDeviceAllocator(AllocatorPolicy policy);
  ~CachingDeviceAllocator() override;

  std::string name() const override { return "caching:" + PolicyName(policy_); }
  const AllocatorStats& stats() const { return sim_.stats(); }

 protected:
  core::StatusOr<void*> DoAllocate(int64_t id, int64_t aligned, const std::string& name,
                                   TensorKind kind) override;
  void DoRelease(int64_t id, void* data, int64_t aligned) override;

 private:
  AllocatorPolicy policy_;
  // The real memory of a simulated segment: `mapped` bytes at `data` (an expandable segment:
  // `reserved` bytes of address space, the first `mapped` of them touched).
  struct Backing {
    char* data = nullptr;
    int64_t mapped = 0;
    int64_t reserved = 0;
  };
  // Maps the segments the sim created, unmaps those it released, follows expandable segments'
  // growth and shrinkage. Infeasible when the host cannot map a segment.
  core::Status SyncSegments();

  CachingAllocatorSim sim_;
  std::unordered_map<int64_t, int> handles_;  // allocation id -> sim handle
  std::vector<Backing> backings_;             // by sim segment
};

}  // namespace tessera::xema
