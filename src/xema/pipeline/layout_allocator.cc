#include "xema/pipeline/layout_allocator.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstring>
#include <memory>

namespace tessera::xema {

core::Status LayoutDeviceAllocator::CheckOffsets(const ExpandedTrace& x, const Layout& layout) {
  if (layout.offsets.size() != x.tensors.size()) {
    return core::InvalidArgument(
        fmt::format("layout {}: got {} offsets, the trace has {} tensor instances",
                    layout.algorithm, layout.offsets.size(), x.tensors.size()));
  }
  return core::Status::Ok();
}

core::StatusOr<std::unique_ptr<LayoutDeviceAllocator>> LayoutDeviceAllocator::CreateIn(
    const ExpandedTrace& x, const Layout& layout, char* region, int64_t region_bytes) {
  RETURN_IF_ERROR(CheckOffsets(x, layout));
  if (layout.arena_bytes > region_bytes || (layout.arena_bytes > 0 && region == nullptr)) {
    return core::InvalidArgument(
        fmt::format("layout {}: an arena of {} bytes does not fit a region of {} bytes",
                    layout.algorithm, layout.arena_bytes, region_bytes));
  }
  return std::unique_ptr<LayoutDeviceAllocator>(
      new LayoutDeviceAllocator(x, layout, region, /*owned=*/false));
}

core::StatusOr<std::unique_ptr<LayoutDeviceAllocator>> LayoutDeviceAllocator::Create(
    const ExpandedTrace& x, const Layout& layout) {
  RETURN_IF_ERROR(CheckOffsets(x, layout));
  void* arena = nullptr;
  if (layout.arena_bytes > 0) {
    arena = mmap(nullptr, static_cast<size_t>(layout.arena_bytes), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (arena == MAP_FAILED) {
      return core::Infeasible(fmt::format("layout {}: cannot map an arena of {} bytes: {}",
                                          layout.algorithm, layout.arena_bytes,
                                          std::strerror(errno)));
    }
  }
  return std::unique_ptr<LayoutDeviceAllocator>(
      new LayoutDeviceAllocator(x, layout, arena, /*owned=*/true));
}

LayoutDeviceAllocator::LayoutDeviceAllocator(const ExpandedTrace& x, const Layout& layout,
                                             void* arena, bool owned)
    : x_(x),
      offsets_(layout.offsets),
      algorithm_(layout.algorithm),
      arena_bytes_(layout.arena_bytes),
      arena_(static_cast<char*>(arena)),
      owned_(owned) {}

LayoutDeviceAllocator::~LayoutDeviceAllocator() {
  // The base class CHECKs that every tensor was freed; the arena goes after.
  if (owned_ && arena_ != nullptr) munmap(arena_, static_cast<size_t>(arena_bytes_));
}

core::StatusOr<void*> LayoutDeviceAllocator::DoAllocate(int64_t id, int64_t aligned,
                                                        const std::string& name, TensorKind kind) {
  if (!status_.ok()) return status_;
  const int64_t op = in_op() ? ops() - 1 : -1;
  auto diverged = [&](const std::string& why) {
    status_ = core::FailedPrecondition(
        fmt::format("run diverged from the trace at allocation {} '{}': {}", id, name, why));
    return status_;
  };
  if (id >= static_cast<int64_t>(x_.tensors.size())) {
    return diverged(fmt::format("the trace has only {} allocations", x_.tensors.size()));
  }
  const FlatTensor& f = x_.tensors[id];
  if (f.bytes != aligned) {
    return diverged(fmt::format("{} bytes, the trace has {}", aligned, f.bytes));
  }
  const bool weight = f.kind == TensorKind::kWeight;
  if (weight != (kind == TensorKind::kWeight) || (weight ? op != -1 : op != f.alloc_op)) {
    return diverged(fmt::format("at op {} as {}, the trace has op {} as {}", op, KindName(kind),
                                f.alloc_op, KindName(f.kind)));
  }
  return static_cast<void*>(arena_ + offsets_[id]);
}

core::Status LayoutDeviceAllocator::Rearm() {
  if (!status_.ok()) return status_;
  if (in_op()) return core::FailedPrecondition("layout arena: Rearm inside an open op");
  int64_t weights = 0, weight_bytes = 0;
  while (weights < static_cast<int64_t>(x_.tensors.size()) &&
         x_.tensors[weights].kind == TensorKind::kWeight) {
    weight_bytes += x_.tensors[weights].bytes;
    ++weights;
  }
  if (allocations() < weights || live_bytes() != weight_bytes) {
    return core::FailedPrecondition(fmt::format(
        "layout arena: cannot rearm with {} bytes live after {} allocations; the template's "
        "{} weights hold {} bytes",
        live_bytes(), allocations(), weights, weight_bytes));
  }
  Rewind(weights);
  return core::Status::Ok();
}

void LayoutDeviceAllocator::DoRelease(int64_t id, void* /*data*/, int64_t /*aligned*/) {
  if (!status_.ok() || id >= static_cast<int64_t>(x_.tensors.size())) return;
  const FlatTensor& f = x_.tensors[id];
  const int64_t op = in_op() ? ops() - 1 : -1;
  const bool ok = f.kind == TensorKind::kWeight ? op == -1 : op == f.free_op;
  if (!ok) {
    status_ = core::FailedPrecondition(fmt::format(
        "run diverged from the trace at allocation {}: released at op {}, the trace frees it "
        "at op {}",
        id, op, f.kind == TensorKind::kWeight ? -1 : f.free_op));
  }
}

}  // namespace tessera::xema
