// Test-only helpers for tests of models that run on a device allocator (not part of
// tessera_models): OpPeakObserver records, for every op of a run on one allocator, the most live
// bytes the allocator held while the op was open (its peak: live at BeginOp, raised by each
// allocation; frees inside an op are released only at its end, so nothing lowers it), the
// aligned bytes of each tensor it allocated (by name) and its counted FLOPs. MaxAbsDiff
// compares outputs; BackendGuard restores the process-wide GEMM backend a test switched;
// ForEachGemmBackend runs a check under each backend the build has.
// Thread-safety: as the allocator (one thread).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/gemm.h"
#include "runtime/device_allocator.h"

namespace tessera::models::testing {

class OpPeakObserver final : public runtime::AllocationObserver {
 public:
  struct Op {
    std::string name;
    int64_t peak_bytes = 0;
    double flops = 0;
    std::map<std::string, int64_t> allocs;  // tensor name -> aligned bytes (summed)
  };

  // Attaches itself to `allocator` until destroyed.
  explicit OpPeakObserver(runtime::DeviceAllocator& allocator) : allocator_(allocator) {
    allocator_.set_observer(this);
  }
  ~OpPeakObserver() override { allocator_.set_observer(nullptr); }
  OpPeakObserver(const OpPeakObserver&) = delete;
  OpPeakObserver& operator=(const OpPeakObserver&) = delete;

  void OnAllocate(int64_t, const std::string& name, runtime::TensorKind, int64_t bytes,
                  int64_t op) override {
    if (op < 0 || ops_.empty()) return;
    Op& o = ops_.back();
    o.peak_bytes = std::max(o.peak_bytes, allocator_.live_bytes());
    o.allocs[name] += bytes;
  }
  void OnRelease(int64_t, int64_t) override {}
  void OnBeginOp(int64_t, const runtime::OpInfo& info) override {
    ops_.push_back({info.name, allocator_.live_bytes(), 0, {}});
  }
  void OnEndOp(int64_t, double flops, double) override { ops_.back().flops = flops; }

  const std::vector<Op>& ops() const { return ops_; }
  // The last op named `name`, or null.
  const Op* Find(const std::string& name) const {
    for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
      if (it->name == name) return &*it;
    }
    return nullptr;
  }
  // The largest peak over ops whose name starts with `prefix`.
  int64_t MaxPeak(const std::string& prefix) const {
    int64_t peak = 0;
    for (const Op& o : ops_) {
      if (o.name.rfind(prefix, 0) == 0) peak = std::max(peak, o.peak_bytes);
    }
    return peak;
  }
  // FLOPs summed over ops whose name starts with `prefix`.
  double Flops(const std::string& prefix) const {
    double flops = 0;
    for (const Op& o : ops_) {
      if (o.name.rfind(prefix, 0) == 0) flops += o.flops;
    }
    return flops;
  }

 private:
  runtime::DeviceAllocator& allocator_;
  std::vector<Op> ops_;
};

// max |a_i - b_i| in double; infinity when the sizes differ.
inline double MaxAbsDiff(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
  return diff;
}

// Restores the GEMM backend in use at construction when it goes out of scope.
class BackendGuard {
 public:
  BackendGuard() : saved_(kernels::CurrentGemmBackend()) {}
  ~BackendGuard() { CHECK(kernels::SetGemmBackend(saved_).ok()); }
  BackendGuard(const BackendGuard&) = delete;
  BackendGuard& operator=(const BackendGuard&) = delete;

 private:
  kernels::GemmBackend saved_;
};

// Runs fn(backend) once under each GEMM backend this build has (oneDNN, then OpenBLAS) and
// restores the backend in force before. A backend that cannot be selected fails the test.
template <typename Fn>
void ForEachGemmBackend(Fn&& fn) {
  const BackendGuard guard;
  for (const kernels::GemmBackend backend :
       {kernels::GemmBackend::kOneDnn, kernels::GemmBackend::kOpenBlas}) {
    if (!kernels::GemmBackendAvailable(backend)) continue;
    ASSERT_TRUE(kernels::SetGemmBackend(backend).ok()) << kernels::GemmBackendName(backend);
    fn(backend);
  }
}

}  // namespace tessera::models::testing
