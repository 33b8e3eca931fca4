// OpScope: RAII bracket of one op on a DeviceAllocator (device_allocator.h). The
// constructor calls BeginOp({name, phase, section, step}); the destructor calls EndOp with the
// FLOPs and bytes counted through Count(), so an early error return never leaves an op open.
// Tensors freed while the scope is alive are released when it ends (the allocator's rule).
//
// OpContext carries the phase, section and step shared by a run of ops (e.g. every op of one
// denoising step), so components (text encoder, DiT, VAE) can open their own ops.
//
// Thread-safety: as the allocator (one thread at a time). Nesting scopes is a programming
// error (the allocator CHECK-fails).
#pragma once

#include <string>
#include <utility>

#include "runtime/device_allocator.h"

namespace tessera::runtime {

struct OpContext {
  std::string phase;  // the system's phase label (OpInfo::phase)
  Section section = Section::kPrologue;
  int step = -1;  // 0-based denoising step for body ops, -1 otherwise
};

class OpScope {
 public:
  OpScope(DeviceAllocator& allocator, std::string name, const OpContext& context)
      : allocator_(allocator) {
    allocator_.BeginOp({std::move(name), context.phase, context.section, context.step});
  }
  ~OpScope() { allocator_.EndOp(flops_, bytes_); }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

  // Adds floating-point operations and bytes moved to the op's totals.
  void Count(double flops, double bytes = 0) {
    flops_ += flops;
    bytes_ += bytes;
  }

 private:
  DeviceAllocator& allocator_;
  double flops_ = 0;
  double bytes_ = 0;
};

}  // namespace tessera::runtime
