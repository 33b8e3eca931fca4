// Conformance checks for Communicator backends (test support, not part of tessera_comm).
// The same checks run on the in-process backend (gtest, 1-4 threads) and under real MPI
// (comm_mpi_test, mpirun -np 2/3/4), so both backends are held to one contract.
//
// Every check is collective over the communicator it is given: all ranks call it with the
// same seed. A check never stops at the first failure: it records what went wrong and keeps
// making the same sequence of communication calls, so a failure on one rank cannot leave the
// others waiting. It returns OK, or Internal listing (up to a few of) the failures seen on
// this rank. Inputs are seeded pseudo-random values; each rank computes the expected result
// directly from the seed (a plain oracle independent of the backend).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace tessera::comm::testing {

using CheckFn = std::function<Status(Communicator& comm, uint64_t seed)>;

struct NamedCheck {
  std::string name;
  CheckFn fn;
};

// Collectives (native and the p2p algorithms, compared with the oracle and each other),
// point-to-point, sub-communicators and argument validation.
Status CheckAllToAllV(Communicator& comm, uint64_t seed);
Status CheckAllToAllVLarge(Communicator& comm, uint64_t seed);  // blocks up to 40k floats
Status CheckAllGatherV(Communicator& comm, uint64_t seed);
Status CheckAllGather(Communicator& comm, uint64_t seed);
Status CheckAllReduceSumFloat(Communicator& comm, uint64_t seed);
Status CheckAllReduceSumDouble(Communicator& comm, uint64_t seed);
Status CheckBroadcast(Communicator& comm, uint64_t seed);
Status CheckBarrier(Communicator& comm, uint64_t seed);
Status CheckPointToPoint(Communicator& comm, uint64_t seed);
Status CheckOverlap(Communicator& comm, uint64_t seed);
Status CheckSubCommunicators(Communicator& comm, uint64_t seed);
Status CheckValidation(Communicator& comm, uint64_t seed);
// Rank 0 waits for a message that never comes: WaitFor(0.3 s) and Wait() under a 0.2 s op
// timeout must return DeadlineExceeded within bounded time; the communicator stays usable.
Status CheckP2pTimeout(Communicator& comm, uint64_t seed);

// Typed collectives (conformance_dtypes.cc), each over f32, bf16, i64 and f64: data movement
// bit for bit against the oracle, sums against a double (exact for i64) reference computed
// from the seed, identical bits on every rank, ReduceScatter(V), bf16 round-to-nearest-even
// of sums on known values (ties, negatives, inf/NaN passthrough, overflow), argument errors,
// AllGatherValue, and BroadcastResult of values and errors.
Status CheckDTypeAllToAllV(Communicator& comm, uint64_t seed);
Status CheckDTypeAllGatherV(Communicator& comm, uint64_t seed);
Status CheckDTypeAllGather(Communicator& comm, uint64_t seed);
Status CheckDTypeBroadcast(Communicator& comm, uint64_t seed);
Status CheckDTypeAllReduceSum(Communicator& comm, uint64_t seed);
Status CheckReduceScatter(Communicator& comm, uint64_t seed);
Status CheckReduceScatterV(Communicator& comm, uint64_t seed);
Status CheckBf16SumRounding(Communicator& comm, uint64_t seed);
Status CheckDTypeValidation(Communicator& comm, uint64_t seed);
Status CheckAllGatherValue(Communicator& comm, uint64_t seed);
Status CheckBroadcastResult(Communicator& comm, uint64_t seed);
std::vector<NamedCheck> DTypeChecks();

// All of the above, in the order they are run.
std::vector<NamedCheck> ConformanceChecks();

// Breaks a fresh sub-communicator of world ranks {1, 0} (needs size >= 2): rank 0 calls a
// Barrier that rank 1 joins only after rank 0's 0.3 s op timeout expired. Rank 0 must get
// DeadlineExceeded and then FailedPrecondition for later calls; rank 1's late Barrier must
// still succeed. Run at most once per world communicator, after everything else.
Status CheckCollectiveDeadline(Communicator& world, uint64_t seed);

}  // namespace tessera::comm::testing
