// LayoutDeviceAllocator: replays a run from a static layout (static_layout.h) inside one
// arena of exactly layout.arena_bytes, mapped and touched up front (the device memory a
// server would reserve). Allocation k gets the arena at layout.offsets[k]; the run must be
// the one the trace recorded: allocation k must have the bytes of instance k of the expanded
// trace and happen at its alloc op, and be released at its free op (weights: outside ops, and
// never during the request). A run that diverges gets FailedPrecondition ("run diverged from
// the trace at allocation k ...") from the next Allocate, and status() keeps the first
// divergence, so a caller checks status() after the run: a diverged run may have overwritten
// live data (two instances the layout thought disjoint in time).
//
// Several requests of one template: after a run completes with the weights still loaded (the
// pipeline kept), Rearm() starts the replay again after the weights, so the next request of
// the same template runs from the same arena without reloading them.
//
// Thread-safety: one thread (runtime::DeviceAllocator).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "runtime/device_allocator.h"
#include "xema/memory_trace.h"
#include "xema/static_layout.h"

namespace tessera::xema {

class LayoutDeviceAllocator final : public runtime::DeviceAllocator {
 public:
  // Maps the arena (Infeasible if the host cannot) and checks that `layout` has one offset per
  // instance of `x` (InvalidArgument otherwise).
  static core::StatusOr<std::unique_ptr<LayoutDeviceAllocator>> Create(const ExpandedTrace& x,
                                                                       const Layout& layout);
  // The same over memory the caller owns: `region` (region_bytes >= layout.arena_bytes, else
  // InvalidArgument; 64-byte aligned) must outlive the allocator. Lets the arenas of several
  // templates share one region when their requests never overlap in time (one request at a
  // time per device).
  static core::StatusOr<std::unique_ptr<LayoutDeviceAllocator>> CreateIn(const ExpandedTrace& x,
                                                                         const Layout& layout,
                                                                         char* region,
                                                                         int64_t region_bytes);
  ~LayoutDeviceAllocator() override;

  std::string name() const override { return "layout:" + algorithm_; }
  int64_t arena_bytes() const { return arena_bytes_; }
  // OK, or the first divergence from the trace.
  const core::Status& status() const { return status_; }
  // Ready for the next run of the template with the weights (the trace's leading weight
  // instances) still live: FailedPrecondition when the run diverged or anything but those
  // weights is live (then the caller drops the arena).
  core::Status Rearm();

 protected:
  core::StatusOr<void*> DoAllocate(int64_t id, int64_t aligned, const std::string& name,
                                   TensorKind kind) override;
  void DoRelease(int64_t id, void* data, int64_t aligned) override;

 private:
  LayoutDeviceAllocator(const ExpandedTrace& x, const Layout& layout, void* arena, bool owned);
  static core::Status CheckOffsets(const ExpandedTrace& x, const Layout& layout);

  const ExpandedTrace& x_;
  std::vector<int64_t> offsets_;
  std::string algorithm_;
  int64_t arena_bytes_ = 0;
  char* arena_ = nullptr;
  bool owned_ = true;  // mapped by Create (unmapped at destruction), or the caller's region
  core::Status status_;
};

}  // namespace tessera::xema
