#include "runtime/device_allocator.h"

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

#include "core/check.h"

namespace tessera::runtime {

const char* KindName(TensorKind kind) {
  switch (kind) {
    case TensorKind::kWeight:
      return "weight";
    case TensorKind::kActivation:
      return "act";
    case TensorKind::kWorkspace:
      return "workspace";
  }
  return "?";
}

const char* SectionName(Section section) {
  switch (section) {
    case Section::kPrologue:
      return "prologue";
    case Section::kBody:
      return "body";
    case Section::kEpilogue:
      return "epilogue";
  }
  return "?";
}

int64_t AlignBytes(int64_t bytes, int64_t granularity_bytes) {
  return (bytes + granularity_bytes - 1) / granularity_bytes * granularity_bytes;
}

DeviceTensor::DeviceTensor(DeviceTensor&& other) noexcept
    : allocator_(std::exchange(other.allocator_, nullptr)),
      id_(std::exchange(other.id_, -1)),
      bytes_(std::exchange(other.bytes_, 0)),
      data_(std::exchange(other.data_, nullptr)) {}

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& other) noexcept {
  if (this != &other) {
    Reset();
    allocator_ = std::exchange(other.allocator_, nullptr);
    id_ = std::exchange(other.id_, -1);
    bytes_ = std::exchange(other.bytes_, 0);
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

void DeviceTensor::Reset() {
  if (allocator_ == nullptr) return;
  allocator_->Free(id_);
  allocator_ = nullptr;
  id_ = -1;
  bytes_ = 0;
  data_ = nullptr;
}

DeviceAllocator::DeviceAllocator(int64_t budget_bytes, int64_t granularity_bytes)
    : budget_bytes_(budget_bytes), granularity_bytes_(granularity_bytes) {
  CHECK(granularity_bytes >= 1) << "allocator granularity " << granularity_bytes;
}

DeviceAllocator::~DeviceAllocator() {
  CHECK(!in_op_) << "allocator destroyed inside an op";
  CHECK(live_.empty()) << live_.size() << " tensors outlive their allocator";
}

core::StatusOr<DeviceTensor> DeviceAllocator::Allocate(int64_t bytes, const std::string& name,
                                                       TensorKind kind) {
  if (bytes < 1 || bytes > kMaxTensorBytes) {
    return core::InvalidArgument(
        fmt::format("tensor {}: got {} bytes, must be in [1, {}]", name, bytes, kMaxTensorBytes));
  }
  const int64_t aligned = AlignBytes(bytes, granularity_bytes_);
  if (budget_bytes_ > 0 && live_bytes_ + aligned > budget_bytes_) {
    return core::Infeasible(
        fmt::format("out of device memory: tensor {} needs {} bytes with {} live, budget {}", name,
                    aligned, live_bytes_, budget_bytes_));
  }
  const int64_t id = next_id_;
  auto data = DoAllocate(id, aligned, name, kind);
  if (!data.ok()) return data.status();
  ++next_id_;
  live_.emplace(id, Live{*data, aligned});
  live_bytes_ += aligned;
  if (live_bytes_ > peak_bytes_) peak_bytes_ = live_bytes_;
  if (observer_ != nullptr) observer_->OnAllocate(id, name, kind, aligned, in_op_ ? ops_ - 1 : -1);
  DeviceTensor t;
  t.allocator_ = this;
  t.id_ = id;
  t.bytes_ = bytes;
  t.data_ = *data;
  return t;
}

void DeviceAllocator::BeginOp(OpInfo info) {
  CHECK(!in_op_) << "BeginOp(" << info.name << ") inside an open op";
  in_op_ = true;
  ++ops_;
  if (observer_ != nullptr) observer_->OnBeginOp(ops_ - 1, info);
}

void DeviceAllocator::EndOp(double flops, double bytes) {
  CHECK(in_op_) << "EndOp without BeginOp";
  // Observers see the op end (and its time stop) before its frees take effect.
  if (observer_ != nullptr) observer_->OnEndOp(ops_ - 1, flops, bytes);
  for (int64_t id : pending_) Release(id);
  pending_.clear();
  in_op_ = false;
}

void DeviceAllocator::Free(int64_t id) {
  CHECK(live_.count(id) == 1) << "free of tensor " << id << " that is not live";
  if (in_op_) {
    pending_.push_back(id);
  } else {
    Release(id);
  }
}

void DeviceAllocator::Release(int64_t id) {
  auto it = live_.find(id);
  CHECK(it != live_.end());
  const Live live = it->second;
  live_.erase(it);
  live_bytes_ -= live.aligned;
  DoRelease(id, live.data, live.aligned);
  if (observer_ != nullptr) observer_->OnRelease(id, in_op_ ? ops_ - 1 : -1);
}

void DeviceAllocator::Rewind(int64_t next_id) {
  CHECK(!in_op_) << "Rewind inside an open op";
  for (const auto& [id, live] : live_) {
    CHECK(id < next_id) << "Rewind to id " << next_id << " with tensor " << id << " live";
  }
  next_id_ = next_id;
  ops_ = 0;
}

core::StatusOr<DeviceTensor> AllocateWorkspaceF32(DeviceAllocator& allocator, int64_t count,
                                                  const std::string& name) {
  if (count == 0) return DeviceTensor();
  return allocator.AllocateF32(count, name, TensorKind::kWorkspace);
}

core::StatusOr<void*> HeapDeviceAllocator::DoAllocate(int64_t /*id*/, int64_t aligned,
                                                      const std::string& name,
                                                      TensorKind /*kind*/) {
  // aligned_alloc takes a multiple of the alignment; the accounting keeps `aligned`.
  void* p = std::aligned_alloc(64, static_cast<size_t>(AlignBytes(aligned, 64)));
  if (p == nullptr) {
    return core::Infeasible(
        fmt::format("out of host memory: tensor {} needs {} bytes", name, aligned));
  }
  return p;
}

void HeapDeviceAllocator::DoRelease(int64_t /*id*/, void* data, int64_t /*aligned*/) {
  std::free(data);
}

}  // namespace tessera::runtime
