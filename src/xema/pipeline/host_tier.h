// HostTier: the host memory tier of the diffusion pipeline (tiny_pipeline.h) and the emulated
// link between device and host memory, so that a tensor can be parked in host memory over the
// ops where it is idle and brought back before its next use (Xema's offload mitigation: exact,
// paid for in copy time).
//
// Memory: host copies are plain heap blocks (64-byte aligned), counted in host_live_bytes()
// and its peak; with a host budget (> 0) a copy that would exceed it fails with Infeasible
// ("out of host memory ..."). Device memory comes from the runtime::DeviceAllocator given to
// Prefetch. Link: two PacedCopiers (comm/paced_copier.h), device->host and host->device, each of
// `bytes_per_s` and `latency_ns` (a GPU has a copy engine per direction and PCIe is full
// duplex, so a park and a prefetch do not queue behind each other). ForDevice paces the link
// as Compass paces its links (runtime/time_scale.h), with s the time scale:
//     bytes_per_s = host_gbps * 1e9 / s,   latency_ns = host_latency_s * s * 1e9.
//
// TieredTensor: where one tensor lives: a device copy (a runtime::DeviceTensor), a host copy, or
// both.
//   Adopt(runtime::DeviceTensor&&)  device copy only.
//   ToHost(t)              starts the device->host copy; nothing when the host copy is current
//                          or on its way. The device data must not change while the host copy
//                          is kept: a read-only tensor (text context, weights) is copied out
//                          once and parked any number of times; a tensor that changes is
//                          Adopted anew.
//   Park(t)                ToHost if needed, waits for the copy, frees the device copy. Inside
//                          an open op the bytes are released when that op ends (the allocator's
//                          rule), so park inside the op after the tensor's last use.
//   Prefetch(t, ...)       allocates a device copy through `allocator` (Infeasible passes out,
//                          nothing changed) and starts the host->device copy into it.
//   Fetch(t)               waits for that copy; device() is usable after it.
//   TakeDevice(t)          moves the device copy out (after Fetch); the host copy stays.
//   Mirror(src)            a host copy of `src` made now on the calling thread, not paced:
//                          for data that reaches the device through host memory anyway
//                          (weights at load time, outside any request).
// Exposed seconds (stats().exposed_s): wall time the calling thread spent blocked on copies
// in Park, Fetch and TieredTensor::Reset/destruction: the measured cost of offloading, which
// the overlap of a copy with compute hides: exposed = max(0, copy - overlap window).
//
// Lifetime: a TieredTensor's destructor (and Reset) waits for its copies in flight before it
// frees its device and host memory, so an error return never leaves a copy reading or writing
// freed memory. Tiered tensors must not outlive their tier, nor device copies their allocator.
// Thread-safety: one thread uses a tier and its tensors (the copy threads are internal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "comm/paced_copier.h"
#include "core/status.h"
#include "runtime/device_allocator.h"
#include "runtime/time_scale.h"

namespace tessera::xema {

// The default host link: an H100 SXM5 on PCIe 5.0 x16, about 55 GB/s per direction achievable
// (modeled from the PCIe 5.0 x16 line rate of 64 GB/s); its latency is not modeled (0).
inline constexpr double kH100Pcie5HostGbps = 55.0;
inline constexpr const char* kHostLinkDevicePreset = "h100-sxm5-80gb";
// ForDevice refuses a slower emulated link (100 KB/s: a request would take hours).
inline constexpr double kMinHostLinkBytesPerS = 1e5;

struct HostTierStats {
  int64_t to_host_copies = 0, to_host_bytes = 0;
  int64_t to_device_copies = 0, to_device_bytes = 0;
  double to_host_busy_s = 0, to_device_busy_s = 0;  // modeled link seconds (PacedCopier)
  double exposed_s = 0;                             // the calling thread blocked on copies
  int64_t host_live_bytes = 0;                      // host copies held now
  int64_t host_peak_bytes = 0;                      // since construction or ResetStats
  int64_t mirrored_bytes = 0;                       // copied by Mirror (not paced)
};

// The time scale of the default host link's device (kHostLinkDevicePreset) against this
// machine: fixed at `fixed_scale` when > 0 (FixedTimeScale), else measured (one-core GEMM).
core::StatusOr<runtime::TimeScale> HostLinkTimeScale(double fixed_scale = 0);

class HostTier;

class TieredTensor {
 public:
  TieredTensor() = default;
  TieredTensor(TieredTensor&& other) noexcept;
  TieredTensor& operator=(TieredTensor&& other) noexcept;
  TieredTensor(const TieredTensor&) = delete;
  TieredTensor& operator=(const TieredTensor&) = delete;
  ~TieredTensor() { Reset(); }

  bool empty() const { return tier_ == nullptr; }
  int64_t bytes() const { return bytes_; }
  bool on_device() const { return !device_.empty(); }
  bool on_host() const { return host_ != nullptr; }  // a host copy is kept (maybe in flight)
  bool fetching() const { return to_device_ != 0; }  // a host->device copy is in flight
  // The device copy; CHECKs that no copy into it is in flight (Fetch first).
  runtime::DeviceTensor& device();
  // The host copy's bytes; CHECKs that it is complete (Park or WaitOnHost first).
  std::span<const std::byte> host() const;
  // Waits for copies in flight, then frees the device copy (released at the end of the open
  // op, if any) and the host copy. No-op when empty.
  void Reset();

 private:
  friend class HostTier;
  void MoveFrom(TieredTensor& other) noexcept;

  HostTier* tier_ = nullptr;
  int64_t bytes_ = 0;
  runtime::DeviceTensor device_;
  std::byte* host_ = nullptr;                // bytes_ bytes, owned
  comm::PacedCopier::Ticket to_host_ = 0;    // device->host copy of host_, 0: none pending
  comm::PacedCopier::Ticket to_device_ = 0;  // host->device copy into device_, 0: none
};

class HostTier {
 public:
  // A link of `bytes_per_s` (finite, > 0) and `latency_ns` (>= 0) per direction, and a host
  // budget (0: unbounded). InvalidArgument naming the value otherwise.
  static core::StatusOr<std::unique_ptr<HostTier>> Create(double bytes_per_s,
                                                          int64_t latency_ns = 0,
                                                          int64_t host_budget_bytes = 0);
  // The link of a device with `host_gbps` GB/s (and `host_latency_s`) to the host, emulated at
  // the time scale `scale` (see the file comment); InvalidArgument naming host_gbps for a
  // rate outside (0, 1e6] GB/s or an emulated rate below kMinHostLinkBytesPerS.
  static core::StatusOr<std::unique_ptr<HostTier>> ForDevice(double host_gbps,
                                                             const runtime::TimeScale& scale,
                                                             double host_latency_s = 0,
                                                             int64_t host_budget_bytes = 0);
  ~HostTier();
  HostTier(const HostTier&) = delete;
  HostTier& operator=(const HostTier&) = delete;

  double bytes_per_s() const { return to_host_->bytes_per_s(); }
  int64_t latency_ns() const { return to_host_->latency_ns(); }
  // Modeled seconds of one copy of `bytes` on an idle link.
  double CopySeconds(int64_t bytes) const { return to_host_->JobSeconds(bytes); }

  TieredTensor Adopt(runtime::DeviceTensor&& t);
  core::StatusOr<TieredTensor> Mirror(const runtime::DeviceTensor& src);
  [[nodiscard]] core::Status ToHost(TieredTensor& t);
  // Waits for the host copy (started by ToHost).
  void WaitOnHost(TieredTensor& t);
  [[nodiscard]] core::Status Park(TieredTensor& t);
  [[nodiscard]] core::Status Prefetch(TieredTensor& t, runtime::DeviceAllocator& allocator,
                                      const std::string& name, runtime::TensorKind kind);
  void Fetch(TieredTensor& t);
  runtime::DeviceTensor TakeDevice(TieredTensor& t);

  int64_t copies_in_flight() const { return to_host_->in_flight() + to_device_->in_flight(); }
  HostTierStats stats() const;
  // Zeroes the counters (copies, bytes, busy and exposed seconds) and sets the peak to the
  // live bytes.
  void ResetStats();

 private:
  HostTier(std::unique_ptr<comm::PacedCopier> to_host, std::unique_ptr<comm::PacedCopier> to_device,
           int64_t host_budget_bytes);
  friend class TieredTensor;
  core::StatusOr<std::byte*> AllocateHost(int64_t bytes);
  void FreeHost(std::byte* p, int64_t bytes);
  // Waits for `ticket` of `copier` (if not 0), adding the blocked time to exposed_s.
  void WaitTimed(comm::PacedCopier& copier, comm::PacedCopier::Ticket ticket);

  std::unique_ptr<comm::PacedCopier> to_host_, to_device_;
  int64_t host_budget_bytes_ = 0;
  HostTierStats stats_;
  comm::PacedCopier::Stats base_to_host_, base_to_device_;  // copier stats at ResetStats
  int64_t live_tensors_ = 0;                                // non-empty TieredTensors of this tier
};

}  // namespace tessera::xema
