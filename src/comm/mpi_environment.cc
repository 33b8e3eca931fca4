#include "comm/mpi_environment.h"

#include <fmt/format.h>

#include <numeric>

namespace tessera::comm {

namespace {

int ToMpi(MpiEnvironment::ThreadLevel level) {
  switch (level) {
    case MpiEnvironment::ThreadLevel::kSingle:
      return MPI_THREAD_SINGLE;
    case MpiEnvironment::ThreadLevel::kFunneled:
      return MPI_THREAD_FUNNELED;
    case MpiEnvironment::ThreadLevel::kSerialized:
      return MPI_THREAD_SERIALIZED;
    case MpiEnvironment::ThreadLevel::kMultiple:
      return MPI_THREAD_MULTIPLE;
  }
  return MPI_THREAD_SINGLE;
}

MpiEnvironment::ThreadLevel FromMpi(int level) {
  if (level >= MPI_THREAD_MULTIPLE) return MpiEnvironment::ThreadLevel::kMultiple;
  if (level >= MPI_THREAD_SERIALIZED) return MpiEnvironment::ThreadLevel::kSerialized;
  if (level >= MPI_THREAD_FUNNELED) return MpiEnvironment::ThreadLevel::kFunneled;
  return MpiEnvironment::ThreadLevel::kSingle;
}

}  // namespace

StatusOr<std::unique_ptr<MpiEnvironment>> MpiEnvironment::Create(int* argc, char*** argv,
                                                                 Options options) {
  int finalized = 0;
  MPI_RETURN_IF_ERROR(MPI_Finalized(&finalized));
  if (finalized) {
    return core::FailedPrecondition(
        "MpiEnvironment: MPI was already finalized in this process and cannot be restarted");
  }
  int initialized = 0;
  MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  int provided = MPI_THREAD_SINGLE;
  const bool owns_init = !initialized;
  if (owns_init) {
    MPI_RETURN_IF_ERROR(MPI_Init_thread(argc, argv, ToMpi(options.thread_level), &provided));
  } else {
    MPI_RETURN_IF_ERROR(MPI_Query_thread(&provided));
  }
  auto fail = [owns_init](Status s) {
    if (owns_init) MPI_Finalize();
    return s;
  };
  if (provided < ToMpi(options.thread_level)) {
    return fail(core::FailedPrecondition(
        fmt::format("MpiEnvironment thread_level: required MPI thread level {}, MPI provides {}",
                    ToMpi(options.thread_level), provided)));
  }
  MPI_Comm dup = MPI_COMM_NULL;
  if (Status s = MpiStatus(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup(MPI_COMM_WORLD)");
      !s.ok()) {
    return fail(s);
  }
  MpiComm world_comm(dup);
  int size = 0;
  MPI_Comm_size(dup, &size);
  std::vector<int> world_ranks(size);
  std::iota(world_ranks.begin(), world_ranks.end(), 0);
  StatusOr<std::unique_ptr<MpiCommunicator>> world =
      MpiCommunicator::Create(std::move(world_comm), std::move(world_ranks));
  if (!world.ok()) return fail(world.status());
  return std::unique_ptr<MpiEnvironment>(
      new MpiEnvironment(owns_init, FromMpi(provided), std::move(world).value()));
}

MpiEnvironment::~MpiEnvironment() {
  world_.reset();  // frees every communicator before MPI_Finalize
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_init_ && !finalized) MPI_Finalize();
}

}  // namespace tessera::comm
