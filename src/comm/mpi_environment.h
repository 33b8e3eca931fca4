// MpiEnvironment: RAII owner of the MPI runtime for one process. Create() calls
// MPI_Init_thread and builds the world Communicator (a duplicate of MPI_COMM_WORLD with
// MPI_ERRORS_RETURN); the destructor destroys that communicator (and all its cached
// sub-communicators) and calls MPI_Finalize. If MPI was already initialised by someone else,
// the environment uses it and leaves finalisation to them. MPI can be initialised only once
// per process, so a second environment after the first was destroyed returns
// FailedPrecondition. Requests must be completed or destroyed before the environment.
//
// Launch: `mpirun -np N prog` (add `--oversubscribe` when N exceeds the cores). On one
// machine in a container we use `--mca btl self,vader --mca btl_vader_single_copy_mechanism
// none`, which avoids CMA (ptrace) single-copy failures; across machines add `tcp` to btl.
// When any process exits abnormally (non-zero code, signal, or no MPI_Finalize), mpirun
// kills all the others and exits non-zero; MpiAbort (mpi_util.h) triggers exactly that.
//
// Not thread-safe: create and destroy it on the main thread.
#pragma once

#include <memory>

#include "comm/mpi_communicator.h"

namespace tessera::comm {

class MpiEnvironment {
 public:
  enum class ThreadLevel { kSingle, kFunneled, kSerialized, kMultiple };
  struct Options {
    // Thread support required from MPI; Create fails if MPI provides less. One thread per
    // rank calling MPI needs only kFunneled.
    ThreadLevel thread_level = ThreadLevel::kFunneled;
  };

  // argc / argv may be null.
  static StatusOr<std::unique_ptr<MpiEnvironment>> Create(int* argc, char*** argv, Options options);
  static StatusOr<std::unique_ptr<MpiEnvironment>> Create(int* argc, char*** argv) {
    return Create(argc, argv, Options());
  }
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;
  ~MpiEnvironment();

  MpiCommunicator& world() { return *world_; }
  ThreadLevel provided() const { return provided_; }

 private:
  MpiEnvironment(bool owns_init, ThreadLevel provided, std::unique_ptr<MpiCommunicator> world)
      : owns_init_(owns_init), provided_(provided), world_(std::move(world)) {}

  bool owns_init_;
  ThreadLevel provided_;
  std::unique_ptr<MpiCommunicator> world_;
};

}  // namespace tessera::comm
