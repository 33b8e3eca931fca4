// MemoryTracker and TrackedBuffer: byte accounting for the attention engine's own buffers.
//
// A MemoryTracker counts the bytes of the TrackedBuffers alive against it: current_bytes()
// now, peak_bytes() the largest value since construction or the last ResetPeak(). What is
// counted: every fp32 buffer the engine allocates (per-segment head-split Q/K/V/O, the
// gathered ring-chunk K/V and LSE kept for backward in ForwardState, pack/unpack buffers of
// the all-to-alls and all-gathers, ring receive buffers and partial outputs). Not counted:
// the caller's input/output tensors, std::vector bookkeeping (offset arrays), the kernels'
// internal tile scratch, and MPI's internal buffers.
//
// TrackedBuffer: an owning, UNINITIALISED (write before reading), contiguous float array of
// a fixed size, move-only; it adds its bytes to the tracker on construction and removes them on
// destruction. The tracker must outlive its buffers. Not thread-safe: one tracker per rank
// (per engine), used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace tessera::core {

class MemoryTracker {
 public:
  void Add(int64_t bytes) {
    current_bytes_ += bytes;
    if (current_bytes_ > peak_bytes_) peak_bytes_ = current_bytes_;
  }
  void Remove(int64_t bytes) { current_bytes_ -= bytes; }
  int64_t current_bytes() const { return current_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }
  void ResetPeak() { peak_bytes_ = current_bytes_; }

 private:
  int64_t current_bytes_ = 0;
  int64_t peak_bytes_ = 0;
};

class TrackedBuffer {
 public:
  TrackedBuffer() = default;
  TrackedBuffer(MemoryTracker* tracker, int64_t num_floats)
      : tracker_(tracker),
        size_(num_floats),
        data_(num_floats > 0 ? std::make_unique_for_overwrite<float[]>(num_floats) : nullptr) {
    if (tracker_ != nullptr) tracker_->Add(bytes());
  }
  TrackedBuffer(TrackedBuffer&& o) noexcept
      : tracker_(std::exchange(o.tracker_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        data_(std::move(o.data_)) {}
  TrackedBuffer& operator=(TrackedBuffer&& o) noexcept {
    if (this != &o) {
      Release();
      tracker_ = std::exchange(o.tracker_, nullptr);
      size_ = std::exchange(o.size_, 0);
      data_ = std::move(o.data_);
    }
    return *this;
  }
  TrackedBuffer(const TrackedBuffer&) = delete;
  TrackedBuffer& operator=(const TrackedBuffer&) = delete;
  ~TrackedBuffer() { Release(); }

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return size_; }
  int64_t bytes() const { return size_ * static_cast<int64_t>(sizeof(float)); }
  void Swap(TrackedBuffer& o) noexcept {
    std::swap(tracker_, o.tracker_);
    std::swap(size_, o.size_);
    std::swap(data_, o.data_);
  }

 private:
  void Release() {
    if (tracker_ != nullptr) tracker_->Remove(bytes());
    tracker_ = nullptr;
    size_ = 0;
    data_.reset();
  }
  MemoryTracker* tracker_ = nullptr;
  int64_t size_ = 0;
  std::unique_ptr<float[]> data_;
};

}  // namespace tessera::core
