#include "comm/paced_copier.h"

#include <cmath>
#include <string>

#include "comm/futex.h"
#include "core/check.h"
#include "core/parse_number.h"

namespace tessera::comm {
namespace {

// Endpoint 0 sends, endpoint 1 receives, over resource 0.
PacedLinks OneLink(double bytes_per_s, int64_t latency_ns) {
  PacedLinks links;
  links.num_endpoints = 2;
  links.resources = {PacedResource{"link", bytes_per_s}};
  links.routes.assign(4, PacedRoute{{0}, latency_ns});
  links.packet_bytes = PacedCopier::kPacketBytes;
  return links;
}

}  // namespace

core::StatusOr<std::unique_ptr<PacedCopier>> PacedCopier::Create(double bytes_per_s,
                                                                 int64_t latency_ns) {
  if (!(bytes_per_s > 0) || !std::isfinite(bytes_per_s)) {
    return core::InvalidArgument("paced copier: bandwidth " + core::ShowNumber(bytes_per_s) +
                                 " bytes/s must be finite and > 0");
  }
  if (latency_ns < 0 || latency_ns > kMaxLatencyNs) {
    return core::InvalidArgument("paced copier: latency " + std::to_string(latency_ns) +
                                 " ns must be in [0, " + std::to_string(kMaxLatencyNs) + "]");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<LinkFabric> fabric,
                   LinkFabric::CreateLocal(OneLink(bytes_per_s, latency_ns)));
  return std::unique_ptr<PacedCopier>(new PacedCopier(bytes_per_s, latency_ns, std::move(fabric)));
}

PacedCopier::PacedCopier(double bytes_per_s, int64_t latency_ns, std::unique_ptr<LinkFabric> fabric)
    : bytes_per_s_(bytes_per_s), latency_ns_(latency_ns), fabric_(std::move(fabric)) {
  engine_ = std::make_unique<CopyEngine>(fabric_.get(), /*self_endpoint=*/0);
  engine_->set_wake_lead_ns(0);  // done no earlier than the finish time
}

PacedCopier::~PacedCopier() { engine_.reset(); }  // finishes every job, then stops

double PacedCopier::JobSeconds(int64_t bytes) const {
  return static_cast<double>(latency_ns_) * 1e-9 + static_cast<double>(bytes) / bytes_per_s_;
}

PacedCopier::Ticket PacedCopier::Submit(void* dst, const void* src, int64_t bytes) {
  CHECK(bytes >= 0) << "PacedCopier::Submit: " << bytes << " bytes";
  CopyEngine::Put put;
  put.dst_endpoint = 1;
  put.dst = static_cast<std::byte*>(dst);
  put.src = static_cast<const std::byte*>(src);
  put.bytes = bytes;
  put.wire_bytes = bytes;
  put.signal = &done_;
  std::lock_guard<std::mutex> lock(mu_);
  engine_->Submit(put);
  stats_.jobs += 1;
  stats_.bytes += bytes;
  stats_.busy_s += JobSeconds(bytes);
  return ++submitted_;
}

bool PacedCopier::Done(Ticket ticket) const {
  return CounterReached(done_.load(std::memory_order_acquire), static_cast<uint32_t>(ticket));
}

void PacedCopier::Wait(Ticket ticket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    CHECK(ticket <= submitted_) << "PacedCopier::Wait: ticket " << ticket << " was never issued";
  }
  WaitAtLeast(&done_, static_cast<uint32_t>(ticket), kNoDeadline);
}

void PacedCopier::WaitAll() {
  Ticket last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = submitted_;
  }
  WaitAtLeast(&done_, static_cast<uint32_t>(last), kNoDeadline);
}

int64_t PacedCopier::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(static_cast<uint32_t>(submitted_) -
                              done_.load(std::memory_order_acquire));
}

PacedCopier::Stats PacedCopier::stats() const {
  Stats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s = stats_;
  }
  s.late_ns = engine_->stats().late_wake_ns;
  return s;
}

}  // namespace tessera::comm
