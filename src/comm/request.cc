#include "comm/request.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tessera::comm {

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    Cancel();
    impl_ = std::move(other.impl_);
    timeout_s_ = other.timeout_s_;
  }
  return *this;
}

Request::~Request() { Cancel(); }

void Request::Cancel() {
  if (impl_ == nullptr) return;
  impl_->Cancel();
  impl_.reset();
}

Status Request::WaitFor(double timeout_s) {
  if (impl_ == nullptr) return Status::Ok();
  Status status = impl_->Wait(timeout_s);
  if (status.code() == core::StatusCode::kDeadlineExceeded) return status;  // still pending
  // Completed, or failed: a failed operation may still be queued (e.g. its peer exited), so
  // withdraw it before dropping the handle. Cancel is a no-op on a completed operation.
  Cancel();
  return status;
}

StatusOr<bool> Request::Test() {
  if (impl_ == nullptr) return true;
  StatusOr<bool> done = impl_->Test();
  if (!done.ok()) {
    Cancel();
    return done.status();
  }
  if (*done) impl_.reset();
  return *done;
}

Status WaitAll(std::span<Request> requests) {
  double timeout_s = 0;
  for (const Request& r : requests) timeout_s = std::max(timeout_s, r.timeout_s());
  return WaitAllFor(requests, timeout_s);
}

Status WaitAllFor(std::span<Request> requests, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const bool forever = std::isinf(timeout_s);
  const Clock::time_point start = Clock::now();
  Status first;
  for (Request& r : requests) {
    double left_s = kNoTimeout;
    if (!forever) {
      const double used_s = std::chrono::duration<double>(Clock::now() - start).count();
      left_s = std::max(0.0, timeout_s - used_s);
    }
    Status s = r.WaitFor(left_s);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

}  // namespace tessera::comm
