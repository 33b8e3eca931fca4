#include "xema/pipeline/host_tier.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/check.h"
#include "core/parse_number.h"
#include "hw/device.h"

namespace tessera::xema {

// ---- TieredTensor ----

void TieredTensor::MoveFrom(TieredTensor& other) noexcept {
  tier_ = std::exchange(other.tier_, nullptr);
  bytes_ = std::exchange(other.bytes_, 0);
  device_ = std::move(other.device_);
  host_ = std::exchange(other.host_, nullptr);
  to_host_ = std::exchange(other.to_host_, 0);
  to_device_ = std::exchange(other.to_device_, 0);
}

TieredTensor::TieredTensor(TieredTensor&& other) noexcept { MoveFrom(other); }

TieredTensor& TieredTensor::operator=(TieredTensor&& other) noexcept {
  if (this != &other) {
    Reset();
    MoveFrom(other);
  }
  return *this;
}

runtime::DeviceTensor& TieredTensor::device() {
  CHECK(to_device_ == 0) << "TieredTensor::device() while its host->device copy is in flight";
  return device_;
}

std::span<const std::byte> TieredTensor::host() const {
  CHECK(host_ != nullptr && to_host_ == 0) << "TieredTensor::host() without a complete host copy";
  return {host_, static_cast<size_t>(bytes_)};
}

void TieredTensor::Reset() {
  if (tier_ == nullptr) return;
  tier_->WaitTimed(*tier_->to_host_, to_host_);
  tier_->WaitTimed(*tier_->to_device_, to_device_);
  to_host_ = to_device_ = 0;
  device_.Reset();
  if (host_ != nullptr) tier_->FreeHost(host_, bytes_);
  host_ = nullptr;
  --tier_->live_tensors_;
  tier_ = nullptr;
  bytes_ = 0;
}

// ---- HostTier ----

core::StatusOr<std::unique_ptr<HostTier>> HostTier::Create(double bytes_per_s, int64_t latency_ns,
                                                           int64_t host_budget_bytes) {
  if (host_budget_bytes < 0) {
    return core::InvalidArgument(
        fmt::format("host tier: budget {} bytes must be >= 0 (0: unbounded)", host_budget_bytes));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<comm::PacedCopier> to_host,
                   comm::PacedCopier::Create(bytes_per_s, latency_ns));
  ASSIGN_OR_RETURN(std::unique_ptr<comm::PacedCopier> to_device,
                   comm::PacedCopier::Create(bytes_per_s, latency_ns));
  return std::unique_ptr<HostTier>(
      new HostTier(std::move(to_host), std::move(to_device), host_budget_bytes));
}

core::StatusOr<std::unique_ptr<HostTier>> HostTier::ForDevice(double host_gbps,
                                                              const runtime::TimeScale& scale,
                                                              double host_latency_s,
                                                              int64_t host_budget_bytes) {
  if (!(host_gbps > 0) || !std::isfinite(host_gbps) || host_gbps > 1e6) {
    return core::InvalidArgument("host_gbps: got " + core::ShowNumber(host_gbps) +
                                 ", must be in (0, 1e6] GB/s");
  }
  if (!(host_latency_s >= 0) || host_latency_s > 1) {
    return core::InvalidArgument("host link latency: got " + core::ShowNumber(host_latency_s) +
                                 " s, must be in [0, 1]");
  }
  if (!(scale.scale > 0) || !std::isfinite(scale.scale)) {
    return core::InvalidArgument("host link: time scale " + core::ShowNumber(scale.scale) +
                                 " must be finite and > 0");
  }
  const double bytes_per_s = host_gbps * 1e9 / scale.scale;
  if (bytes_per_s < kMinHostLinkBytesPerS) {
    return core::InvalidArgument(fmt::format(
        "host link: {:.4g} GB/s at time scale {:.4g} is {:.4g} bytes/s emulated, below {:.4g} "
        "(a request would take hours); raise host_gbps or lower the time scale",
        host_gbps, scale.scale, bytes_per_s, kMinHostLinkBytesPerS));
  }
  const int64_t latency_ns = std::llround(host_latency_s * scale.scale * 1e9);
  return Create(bytes_per_s, latency_ns, host_budget_bytes);
}

HostTier::HostTier(std::unique_ptr<comm::PacedCopier> to_host,
                   std::unique_ptr<comm::PacedCopier> to_device, int64_t host_budget_bytes)
    : to_host_(std::move(to_host)),
      to_device_(std::move(to_device)),
      host_budget_bytes_(host_budget_bytes) {}

HostTier::~HostTier() {
  CHECK(live_tensors_ == 0) << live_tensors_ << " tiered tensors outlive their host tier";
}

core::StatusOr<std::byte*> HostTier::AllocateHost(int64_t bytes) {
  const int64_t aligned = (bytes + 63) / 64 * 64;
  if (host_budget_bytes_ > 0 && stats_.host_live_bytes + bytes > host_budget_bytes_) {
    return core::Infeasible(
        fmt::format("out of host memory: a host copy of {} bytes with {} held, host budget {}",
                    bytes, stats_.host_live_bytes, host_budget_bytes_));
  }
  void* p = std::aligned_alloc(64, static_cast<size_t>(aligned));
  if (p == nullptr) {
    return core::Infeasible(fmt::format("out of host memory: a host copy of {} bytes", bytes));
  }
  stats_.host_live_bytes += bytes;
  stats_.host_peak_bytes = std::max(stats_.host_peak_bytes, stats_.host_live_bytes);
  return static_cast<std::byte*>(p);
}

void HostTier::FreeHost(std::byte* p, int64_t bytes) {
  std::free(p);
  stats_.host_live_bytes -= bytes;
}

void HostTier::WaitTimed(comm::PacedCopier& copier, comm::PacedCopier::Ticket ticket) {
  if (ticket == 0 || copier.Done(ticket)) return;
  const auto t0 = std::chrono::steady_clock::now();
  copier.Wait(ticket);
  stats_.exposed_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TieredTensor HostTier::Adopt(runtime::DeviceTensor&& t) {
  CHECK(!t.empty()) << "HostTier::Adopt of an empty tensor";
  TieredTensor out;
  out.tier_ = this;
  out.bytes_ = t.bytes();
  out.device_ = std::move(t);
  ++live_tensors_;
  return out;
}

core::StatusOr<TieredTensor> HostTier::Mirror(const runtime::DeviceTensor& src) {
  CHECK(!src.empty()) << "HostTier::Mirror of an empty tensor";
  ASSIGN_OR_RETURN(std::byte * host, AllocateHost(src.bytes()));
  std::memcpy(host, src.data(), static_cast<size_t>(src.bytes()));
  stats_.mirrored_bytes += src.bytes();
  TieredTensor out;
  out.tier_ = this;
  out.bytes_ = src.bytes();
  out.host_ = host;
  ++live_tensors_;
  return out;
}

core::Status HostTier::ToHost(TieredTensor& t) {
  CHECK(t.tier_ == this) << "HostTier::ToHost of a tensor of another tier";
  if (t.host_ != nullptr) return core::Status::Ok();  // current, or on its way
  CHECK(!t.device_.empty() && t.to_device_ == 0) << "HostTier::ToHost without a device copy";
  ASSIGN_OR_RETURN(t.host_, AllocateHost(t.bytes_));
  t.to_host_ = to_host_->Submit(t.host_, t.device_.data(), t.bytes_);
  return core::Status::Ok();
}

void HostTier::WaitOnHost(TieredTensor& t) {
  WaitTimed(*to_host_, t.to_host_);
  t.to_host_ = 0;
}

core::Status HostTier::Park(TieredTensor& t) {
  RETURN_IF_ERROR(ToHost(t));
  WaitOnHost(t);
  t.device_.Reset();
  return core::Status::Ok();
}

core::Status HostTier::Prefetch(TieredTensor& t, runtime::DeviceAllocator& allocator,
                                const std::string& name, TensorKind kind) {
  CHECK(t.tier_ == this) << "HostTier::Prefetch of a tensor of another tier";
  CHECK(t.host_ != nullptr && t.device_.empty())
      << "HostTier::Prefetch of " << name << ": needs a host copy and no device copy";
  WaitOnHost(t);  // the host copy must be complete before it is read back
  ASSIGN_OR_RETURN(t.device_, allocator.Allocate(t.bytes_, name, kind));
  t.to_device_ = to_device_->Submit(t.device_.data(), t.host_, t.bytes_);
  return core::Status::Ok();
}

void HostTier::Fetch(TieredTensor& t) {
  WaitTimed(*to_device_, t.to_device_);
  t.to_device_ = 0;
}

runtime::DeviceTensor HostTier::TakeDevice(TieredTensor& t) {
  Fetch(t);
  return std::move(t.device_);
}

HostTierStats HostTier::stats() const {
  HostTierStats s = stats_;
  const comm::PacedCopier::Stats h = to_host_->stats(), d = to_device_->stats();
  s.to_host_copies = h.jobs - base_to_host_.jobs;
  s.to_host_bytes = h.bytes - base_to_host_.bytes;
  s.to_host_busy_s = h.busy_s - base_to_host_.busy_s;
  s.to_device_copies = d.jobs - base_to_device_.jobs;
  s.to_device_bytes = d.bytes - base_to_device_.bytes;
  s.to_device_busy_s = d.busy_s - base_to_device_.busy_s;
  return s;
}

void HostTier::ResetStats() {
  base_to_host_ = to_host_->stats();
  base_to_device_ = to_device_->stats();
  stats_.exposed_s = 0;
  stats_.mirrored_bytes = 0;
  stats_.host_peak_bytes = stats_.host_live_bytes;
}

core::StatusOr<runtime::TimeScale> HostLinkTimeScale(double fixed_scale) {
  ASSIGN_OR_RETURN(hw::Device device, hw::DevicePreset(kHostLinkDevicePreset));
  if (fixed_scale > 0) return runtime::FixedTimeScale(device, fixed_scale);
  ASSIGN_OR_RETURN(const double flops, runtime::MeasureCoreGemmFlops());
  return runtime::MakeTimeScale(device, flops);
}

}  // namespace tessera::xema
