#include "comm/paced_copier.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "comm/futex.h"
#include "core/check.h"
#include "core/parse_number.h"

namespace tessera::comm {
namespace {

constexpr double kFarFutureNs = 4e18;

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
  return std::unique_ptr<PacedCopier>(new PacedCopier(bytes_per_s, latency_ns));
}

PacedCopier::PacedCopier(double bytes_per_s, int64_t latency_ns)
    : bytes_per_s_(bytes_per_s), latency_ns_(latency_ns) {
  thread_ = std::thread([this] { Loop(); });
}

PacedCopier::~PacedCopier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

double PacedCopier::JobSeconds(int64_t bytes) const {
  return static_cast<double>(latency_ns_) * 1e-9 + static_cast<double>(bytes) / bytes_per_s_;
}

PacedCopier::Ticket PacedCopier::Submit(void* dst, const void* src, int64_t bytes) {
  CHECK(bytes >= 0) << "PacedCopier::Submit: " << bytes << " bytes";
  const double wire_ns = static_cast<double>(bytes) / bytes_per_s_ * 1e9;
  Ticket ticket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t start = std::max(NowNs(), next_free_ns_);
    // Clamped far in the future (a century) so that no sum overflows.
    const double free_ns = std::min(static_cast<double>(start) + wire_ns, kFarFutureNs);
    next_free_ns_ = static_cast<int64_t>(std::llround(free_ns));
    queue_.push_back({dst, src, bytes, next_free_ns_ + latency_ns_});
    ticket = ++submitted_;
    stats_.jobs += 1;
    stats_.bytes += bytes;
    stats_.busy_s += JobSeconds(bytes);
  }
  work_cv_.notify_one();
  return ticket;
}

bool PacedCopier::Done(Ticket ticket) const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_ >= ticket;
}

void PacedCopier::Wait(Ticket ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  CHECK(ticket <= submitted_) << "PacedCopier::Wait: ticket " << ticket << " was never issued";
  done_cv_.wait(lock, [&] { return done_ >= ticket; });
}

void PacedCopier::WaitAll() {
  std::unique_lock<std::mutex> lock(mu_);
  const Ticket last = submitted_;
  done_cv_.wait(lock, [&] { return done_ >= last; });
}

int64_t PacedCopier::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(submitted_ - done_);
}

PacedCopier::Stats PacedCopier::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void PacedCopier::Loop() {
  UseFineTimerSlack();
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and every job is done
    const Job job = queue_.front();
    queue_.pop_front();
    lock.unlock();
    if (job.bytes > 0) std::memcpy(job.dst, job.src, static_cast<size_t>(job.bytes));
    SleepUntilNs(job.finish_ns);
    const int64_t late = NowNs() - job.finish_ns;
    lock.lock();
    stats_.late_ns += std::max<int64_t>(0, late);
    ++done_;
    done_cv_.notify_all();
  }
}

}  // namespace tessera::comm
