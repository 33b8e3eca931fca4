// comm_mpi_test: the Communicator conformance checks under real MPI.
//
//   mpirun -np N comm_mpi_test                         all checks, twice: with blocking MPI
//                                                      collectives, then with a 30 s op timeout
//                                                      (non-blocking collectives + polling)
//   mpirun -np 3 comm_mpi_test --scenario=rank_death   rank 1 exits mid-step; must not hang
//   mpirun -np 3 comm_mpi_test --scenario=hung_peer    rank 1 hangs; the watchdog aborts the job
//   mpirun -np N comm_mpi_test --emulated=ring1|ring2|direct   the same checks on the emulated
//                                                      backend (link emulator over MPI-3
//                                                      shared windows) with that algorithm
//   mpirun -np 3 comm_mpi_test --scenario=emulated_rank_death   rank 1 exits while the others
//                                                      wait in an emulated AllGather (futex
//                                                      waits, no timeout); must not hang
//   mpirun -np 3 comm_mpi_test --scenario=injected_failure   a check fails on rank 1 only; every
//                                                      rank must exit 1
//
// Each check's result is reduced over all ranks; rank 0 prints "PASS <check>" or
// "FAIL <check>", failing ranks print their reasons, and every rank exits 1 if any check
// failed anywhere.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "comm/conformance.h"
#include "comm/emulated_communicator.h"
#include "comm/mpi_environment.h"

namespace tessera::comm {
namespace {

// Reduces a check result over all ranks; returns true when it failed on any rank.
bool Report(Communicator& world, const std::string& name, const Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "FAIL %s on world rank %d: %s\n", name.c_str(), world.rank(),
                 status.ToString().c_str());
  }
  double failed_ranks = status.ok() ? 0.0 : 1.0;
  Status reduced = world.AllReduceSum(std::span<double>(&failed_ranks, 1));
  if (!reduced.ok()) world.Abort(reduced.WithPrefix("reducing the result of " + name));
  if (world.rank() == 0) {
    if (failed_ranks > 0) {
      std::printf("FAIL %s (%d of %d ranks failed)\n", name.c_str(), static_cast<int>(failed_ranks),
                  world.size());
    } else {
      std::printf("PASS %s\n", name.c_str());
    }
    std::fflush(stdout);
  }
  return failed_ranks > 0;
}

int RunConformance(Communicator& world) {
  uint64_t seed = 20240601;
  int failures = 0;
  for (double timeout_s : {kNoTimeout, 30.0}) {
    world.set_op_timeout_s(timeout_s);
    const std::string suffix = timeout_s == kNoTimeout ? "" : " [op timeout 30 s]";
    for (const testing::NamedCheck& check : testing::ConformanceChecks()) {
      failures += Report(world, check.name + suffix, check.fn(world, seed++));
    }
  }
  world.set_op_timeout_s(kNoTimeout);
  failures += Report(world, "CollectiveDeadline", testing::CheckCollectiveDeadline(world, seed));
  if (world.rank() == 0) {
    std::printf("comm_mpi_test on %d ranks: %s\n", world.size(),
                failures ? "FAIL" : "PASS (all checks)");
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}

// Rank 1 dies while the others wait for it with no timeout: only mpirun can end the job.
int RunRankDeath(Communicator& world) {
  if (Status s = world.Barrier(); !s.ok()) world.Abort(s);
  if (world.rank() == 1) {
    std::printf("rank 1: exiting abnormally mid-step\n");
    std::fflush(stdout);
    _exit(3);
  }
  std::vector<float> buffer(8);
  Status s = world.Recv(buffer, 1, 1);
  std::printf("rank %d: Recv returned %s (expected the job to be killed)\n", world.rank(),
              s.ToString().c_str());
  return 1;
}

// Rank 1 hangs instead of sending; the others' watchdog turns the wait into DeadlineExceeded
// and aborts the whole job.
int RunHungPeer(Communicator& world) {
  if (Status s = world.Barrier(); !s.ok()) world.Abort(s);
  if (world.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    return 1;
  }
  world.set_op_timeout_s(1.0);
  std::vector<float> buffer(8);
  Status s = world.Recv(buffer, 1, 1);
  if (!s.ok()) world.Abort(s);
  return 1;
}

// Rank 1 dies while the others wait for its block inside an emulated AllGather.
int RunEmulatedRankDeath(Communicator& world) {
  PacedLinks links = FullMeshLinks(world.size(), 100e6, 1'000'000);
  auto emulated = EmulatedCommunicator::Create(world, links, EmulatedOptions{});
  if (!emulated.ok()) world.Abort(emulated.status());
  if (world.rank() == 1) {
    std::printf("rank 1: exiting abnormally before the collective\n");
    std::fflush(stdout);
    _exit(3);
  }
  std::vector<float> send(1024), recv(1024 * world.size());
  Status s = (*emulated)->AllGather(std::span<const float>(send), std::span<float>(recv));
  std::printf("rank %d: AllGather returned %s (expected the job to be killed)\n", world.rank(),
              s.ToString().c_str());
  return 1;
}

// A check that fails on rank 1 only: the reduced result must make every rank exit 1.
int RunInjectedFailure(Communicator& world) {
  const Status injected = world.rank() == 1 ? core::Internal("injected failure") : Status::Ok();
  return Report(world, "InjectedFailure", injected) ? 1 : 0;
}

}  // namespace
}  // namespace tessera::comm

int main(int argc, char** argv) {
  using tessera::comm::MpiEnvironment;
  auto env = MpiEnvironment::Create(&argc, &argv);
  if (!env.ok()) {
    std::fprintf(stderr, "comm_mpi_test: %s\n", env.status().ToString().c_str());
    return 2;
  }
  tessera::comm::Communicator& world = (*env)->world();
  std::string scenario, emulated;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--scenario=", 0) == 0) scenario = arg.substr(11);
    if (arg.rfind("--emulated=", 0) == 0) emulated = arg.substr(11);
  }
  int rc = 0;
  if (scenario.empty() && !emulated.empty()) {
    using namespace tessera::comm;  // NOLINT
    auto algo = ParseLinkAlgo(emulated);
    if (!algo.ok()) {
      std::fprintf(stderr, "comm_mpi_test: %s\n", algo.status().ToString().c_str());
      return 2;
    }
    EmulatedOptions o;
    o.algo = *algo;
    o.window_bytes = 4 << 20;
    auto comm = EmulatedCommunicator::Create(world, FullMeshLinks(world.size(), 50e9, 0), o);
    if (!comm.ok()) world.Abort(comm.status());
    rc = RunConformance(**comm);
  } else if (scenario.empty()) {
    rc = tessera::comm::RunConformance(world);
  } else if (scenario == "emulated_rank_death") {
    rc = tessera::comm::RunEmulatedRankDeath(world);
  } else if (scenario == "rank_death") {
    rc = tessera::comm::RunRankDeath(world);
  } else if (scenario == "hung_peer") {
    rc = tessera::comm::RunHungPeer(world);
  } else if (scenario == "injected_failure") {
    rc = tessera::comm::RunInjectedFailure(world);
  } else {
    std::fprintf(stderr,
                 "comm_mpi_test: unknown --scenario=%s (rank_death, hung_peer, "
                 "emulated_rank_death, injected_failure)\n",
                 scenario.c_str());
    rc = 2;
  }
  return rc;
}
