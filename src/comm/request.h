// Request: a handle to one non-blocking point-to-point operation (Communicator::ISend /
// IRecv), so that a caller can overlap communication with compute (ring attention posts
// the next K/V exchange, computes on the current block, then waits).
//
// Lifetime and buffers: the buffer passed to ISend / IRecv must stay alive and unmodified
// (ISend) or untouched (IRecv) until the request completes, i.e. until Wait() / WaitFor()
// returns OK or Test() returns true. A request must not outlive the Communicator (and, for
// MPI, the MpiEnvironment) that created it.
//
// Timeouts (the watchdog): every request carries the op timeout of its communicator at the
// time it was created (Communicator::set_op_timeout_s, default: none). Wait() blocks at most
// that long and then returns DeadlineExceeded; the request then stays pending, so the
// caller may wait again, or give up (destroy it, or call Abort on the communicator).
// WaitFor(timeout_s) uses an explicit timeout instead.
//
// Destroying a pending request cancels it (best effort, bounded): a receive that has not
// matched a message is withdrawn; a send or an already-matched receive is given a short
// grace period to complete and is otherwise abandoned (MPI_Request_free) with a warning on
// stderr. This is an error path: a program that abandons requests should abort soon after.
//
// A default-constructed Request is empty and counts as complete. Requests are move-only
// and not thread-safe: one thread owns and waits on a request.
#pragma once

#include <limits>
#include <memory>
#include <span>

#include "core/status.h"

namespace tessera::comm {

using core::Status;
using core::StatusOr;

// "No timeout": wait forever.
inline constexpr double kNoTimeout = std::numeric_limits<double>::infinity();

// Backend side of a Request. Implementations: the MPI backend and the in-process backend.
class RequestImpl {
 public:
  virtual ~RequestImpl() = default;
  // Polls once without blocking; true when the operation has completed. On completion the
  // final status of the operation is returned by Wait / WaitFor (an error completion such
  // as a truncated receive is reported as an error here too).
  virtual StatusOr<bool> Test() = 0;
  // Blocks until completion or until timeout_s seconds have passed (kNoTimeout: forever);
  // DeadlineExceeded leaves the operation pending. timeout_s == 0 polls once.
  virtual Status Wait(double timeout_s) = 0;
  // Best-effort, bounded cancellation of a pending operation; see the header comment.
  virtual void Cancel() = 0;
};

class Request {
 public:
  Request() = default;
  Request(std::unique_ptr<RequestImpl> impl, double default_timeout_s)
      : impl_(std::move(impl)), timeout_s_(default_timeout_s) {}
  Request(Request&& other) noexcept = default;
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request();

  // Waits with the timeout captured from the communicator at creation.
  Status Wait() { return WaitFor(timeout_s_); }
  // Waits at most timeout_s seconds (kNoTimeout: forever; 0: poll once).
  Status WaitFor(double timeout_s);
  // Polls once; true when complete. A completed request keeps returning true.
  StatusOr<bool> Test();
  // True until the request has completed (or was cancelled).
  bool pending() const { return impl_ != nullptr; }
  double timeout_s() const { return timeout_s_; }
  // Cancels a pending request now (what the destructor does); afterwards pending() is false.
  void Cancel();

 private:
  std::unique_ptr<RequestImpl> impl_;  // null once complete
  double timeout_s_ = kNoTimeout;
};

// Waits for all requests, with one deadline for the whole set: now + the largest timeout_s()
// among them (or `timeout_s` when given). Every request is waited for even after an error;
// returns the first error (a DeadlineExceeded leaves the remaining requests pending).
Status WaitAll(std::span<Request> requests);
Status WaitAllFor(std::span<Request> requests, double timeout_s);

}  // namespace tessera::comm
