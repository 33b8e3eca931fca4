#include "comm/mpi_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "comm/request.h"

namespace tessera::comm {

bool MpiFinalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

std::string MpiErrorString(int mpi_error) {
  char buffer[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(mpi_error, buffer, &length) != MPI_SUCCESS) {
    return fmt::format("MPI error code {}", mpi_error);
  }
  return std::string(buffer, static_cast<size_t>(length));
}

core::Status MpiStatus(int mpi_error, const std::string& what) {
  if (mpi_error == MPI_SUCCESS) return core::Status::Ok();
  return core::Internal(fmt::format("{}: {}", what, MpiErrorString(mpi_error)));
}

core::Status MpiWaitUntil(MPI_Request* request, std::chrono::steady_clock::time_point deadline,
                          const std::string& what) {
  using Clock = std::chrono::steady_clock;
  auto nap = std::chrono::microseconds(1);
  for (int polls = 0;; ++polls) {
    int done = 0;
    const int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return MpiStatus(rc, what);
    if (done) return core::Status::Ok();
    if (Clock::now() >= deadline) {
      return core::DeadlineExceeded(fmt::format("{}: not complete by the deadline", what));
    }
    if (polls < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(200));
    }
  }
}

core::Status MpiWaitFor(MPI_Request* request, double timeout_s, const std::string& what) {
  if (std::isinf(timeout_s)) {
    return MpiStatus(MPI_Wait(request, MPI_STATUS_IGNORE), what);
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  core::Status s = MpiWaitUntil(request, deadline, what);
  if (s.code() == core::StatusCode::kDeadlineExceeded) {
    return core::DeadlineExceeded(fmt::format("{}: not complete after {} s", what, timeout_s));
  }
  return s;
}

void MpiAbort(const core::Status& status, int exit_code) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  const bool usable = initialized && !MpiFinalized();
  int world_rank = -1;
  if (usable) MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::cerr << "tessera: world rank " << world_rank << " aborts: " << status.ToString()
            << std::endl;
  if (usable) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::abort();
}

MpiComm& MpiComm::operator=(MpiComm&& other) noexcept {
  if (this != &other) {
    reset();
    comm_ = other.release();
  }
  return *this;
}

void MpiComm::reset() {
  if (comm_ != MPI_COMM_NULL && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF &&
      !MpiFinalized()) {
    MPI_Comm_free(&comm_);
  }
  comm_ = MPI_COMM_NULL;
}

MpiGroup& MpiGroup::operator=(MpiGroup&& other) noexcept {
  if (this != &other) {
    reset();
    group_ = other.group_;
    other.group_ = MPI_GROUP_NULL;
  }
  return *this;
}

void MpiGroup::reset() {
  if (group_ != MPI_GROUP_NULL && group_ != MPI_GROUP_EMPTY && !MpiFinalized()) {
    MPI_Group_free(&group_);
  }
  group_ = MPI_GROUP_NULL;
}

}  // namespace tessera::comm
