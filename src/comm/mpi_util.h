// MPI helpers for the MPI Communicator backend: turning MPI error codes into Status,
// MPI_CHECK-style macros, MpiAbort, RAII owners for MPI_Comm and MPI_Group, and a deadline-bounded
// wait on an MPI_Request (the watchdog used for point-to-point and timed collectives).
//
// Error handling convention: every communicator we create has MPI_ERRORS_RETURN set, so MPI
// calls return an error code instead of aborting; wrap them in MPI_RETURN_IF_ERROR (expected
// failures, returns a Status naming the call and MPI's error string) or MPI_CHECK (broken
// invariants, aborts with file:line). Not thread-safe beyond what MPI's thread level allows.
#pragma once

#include <mpi.h>

#include <chrono>
#include <string>

#include "core/status.h"

namespace tessera::comm {

// OK for MPI_SUCCESS; otherwise Internal with the message "<what>: <MPI error string>"
// (argument errors are rejected by our own checks before MPI sees them, so an MPI error is
// unexpected; a truncated receive reads "...: MPI_ERR_TRUNCATE: message truncated").
core::Status MpiStatus(int mpi_error, const std::string& what);

// MPI's description of an error code.
std::string MpiErrorString(int mpi_error);

// Whether MPI_Finalize has run (MPI calls other than a few queries are then illegal).
bool MpiFinalized();

// Waits for *request until it completes (OK, or its error) or until `deadline` (then
// DeadlineExceeded; the request stays pending). Polls MPI_Test, yielding between polls at
// first and then sleeping up to 200 us (so a wait may overshoot completion by that much),
// so that an oversubscribed rank does not steal a core from the peer it waits for.
core::Status MpiWaitUntil(MPI_Request* request, std::chrono::steady_clock::time_point deadline,
                          const std::string& what);
// The same with a timeout in seconds (kNoTimeout: MPI_Wait).
core::Status MpiWaitFor(MPI_Request* request, double timeout_s, const std::string& what);

// Prints "tessera: world rank R aborts: <status>" to stderr and calls
// MPI_Abort(MPI_COMM_WORLD, exit_code), which makes mpirun terminate every rank of the job.
// Falls back to std::abort when MPI is not initialised (or already finalised).
[[noreturn]] void MpiAbort(const core::Status& status, int exit_code = 1);

// Owns an MPI_Comm: frees it with MPI_Comm_free on destruction unless it is null or
// predefined, or MPI is already finalized (then it leaks, harmlessly). Move-only.
class MpiComm {
 public:
  MpiComm() = default;
  explicit MpiComm(MPI_Comm comm) : comm_(comm) {}
  MpiComm(MpiComm&& other) noexcept : comm_(other.release()) {}
  MpiComm& operator=(MpiComm&& other) noexcept;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  ~MpiComm() { reset(); }

  MPI_Comm get() const { return comm_; }
  MPI_Comm release() {
    MPI_Comm c = comm_;
    comm_ = MPI_COMM_NULL;
    return c;
  }
  void reset();

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Owns an MPI_Group (MPI_Group_free on destruction). Move-only.
class MpiGroup {
 public:
  MpiGroup() = default;
  explicit MpiGroup(MPI_Group group) : group_(group) {}
  MpiGroup(MpiGroup&& other) noexcept : group_(other.group_) { other.group_ = MPI_GROUP_NULL; }
  MpiGroup& operator=(MpiGroup&& other) noexcept;
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;
  ~MpiGroup() { reset(); }

  MPI_Group get() const { return group_; }
  MPI_Group* out() {  // for MPI calls that create a group; frees the previous one
    reset();
    return &group_;
  }
  void reset();

 private:
  MPI_Group group_ = MPI_GROUP_NULL;
};

}  // namespace tessera::comm

// Returns a Status from the enclosing function when an MPI call fails.
#define MPI_RETURN_IF_ERROR(call) RETURN_IF_ERROR(::tessera::comm::MpiStatus((call), #call))

// Aborts with file:line and the MPI error string when an MPI call fails (invariants only).
#define MPI_CHECK(call)                                                                         \
  do {                                                                                          \
    const int _mpi_rc = (call);                                                                 \
    CHECK(_mpi_rc == MPI_SUCCESS) << #call << ": " << ::tessera::comm::MpiErrorString(_mpi_rc); \
  } while (0)
