#include "comm/in_process_communicator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "comm/conformance.h"

namespace tessera::comm {
namespace {

using core::StatusCode;

// Runs fn on n in-process ranks and returns each rank's status.
std::vector<Status> OnRanks(int n, const std::function<Status(Communicator&)>& fn) {
  std::vector<Status> results(n);
  RunInProcessRanks(n, [&](Communicator& comm) { results[comm.rank()] = fn(comm); });
  return results;
}

std::vector<std::string> CheckNames() {
  std::vector<std::string> names;
  for (const auto& c : testing::ConformanceChecks()) names.push_back(c.name);
  return names;
}

// ---- The conformance checks, at 1..4 ranks, with and without an op timeout ------------

class Conformance : public ::testing::TestWithParam<std::tuple<int, std::string, bool>> {};

TEST_P(Conformance, PassesOnInProcessRanks) {
  const auto& [n, name, timed] = GetParam();
  testing::CheckFn fn;
  for (const auto& c : testing::ConformanceChecks()) {
    if (c.name == name) fn = c.fn;
  }
  ASSERT_TRUE(fn != nullptr);
  const uint64_t seed = 1234 + n;
  std::vector<Status> results = OnRanks(n, [&](Communicator& comm) {
    if (timed) comm.set_op_timeout_s(30.0);
    return fn(comm, seed);
  });
  for (int r = 0; r < n; ++r) EXPECT_TRUE(results[r].ok()) << results[r].ToString();
}

INSTANTIATE_TEST_SUITE_P(AllChecks, Conformance,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::ValuesIn(CheckNames()), ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<1>(info.param) + "_" +
                                  std::to_string(std::get<0>(info.param)) + "ranks" +
                                  (std::get<2>(info.param) ? "_timed" : "");
                         });

TEST(InProcessCommunicator, CollectiveDeadlineBreaksOnlyTheTimedOutCommunicator) {
  for (int n : {2, 3, 4}) {
    std::vector<Status> results =
        OnRanks(n, [](Communicator& comm) { return testing::CheckCollectiveDeadline(comm, 7); });
    for (int r = 0; r < n; ++r) EXPECT_TRUE(results[r].ok()) << results[r].ToString();
  }
}

// ---- In-process strictness -----------------------------------------------------------

TEST(InProcessCommunicator, RunInProcessRanksGivesEachThreadItsRank) {
  std::vector<std::atomic<int>> seen(4);
  RunInProcessRanks(4, [&](Communicator& comm) {
    EXPECT_EQ(comm.size(), 4);
    EXPECT_EQ(comm.world_rank(), comm.rank());
    seen[comm.rank()]++;
  });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

TEST(InProcessCommunicator, MismatchedCollectivesFailOnEveryRank) {
  std::vector<Status> results = OnRanks(2, [](Communicator& comm) -> Status {
    std::vector<float> v(comm.rank() == 0 ? 3 : 4, 1.0f);
    Status size_mismatch = comm.AllReduceSum(v);
    Status kind_mismatch =
        comm.rank() == 0 ? comm.Barrier() : comm.Broadcast(std::span<float>(v), 0);
    std::vector<int64_t> sc = {1, comm.rank() == 0 ? 2 : 1}, sd = {0, 1};
    std::vector<int64_t> rc = {1, 1}, rd = {0, 1};
    std::vector<float> send(3, 1.0f), recv(2);
    Status counts_mismatch = comm.AllToAllV(send, sc, sd, recv, rc, rd);
    if (size_mismatch.code() != StatusCode::kInvalidArgument) return size_mismatch;
    if (kind_mismatch.code() != StatusCode::kInvalidArgument) return kind_mismatch;
    if (counts_mismatch.code() != StatusCode::kInvalidArgument) return counts_mismatch;
    // Detected mismatches do not desynchronise the ranks.
    if (!comm.broken().ok()) return core::Internal("broken after a detected mismatch");
    return comm.Barrier();
  });
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(InProcessCommunicator, MismatchedDTypesFailOnEveryRank) {
  std::vector<Status> results = OnRanks(2, [](Communicator& comm) -> Status {
    std::vector<float> f(4, 1.0f);
    std::vector<double> d(4, 1.0);
    Status sum = comm.rank() == 0 ? comm.AllReduceSum(std::span<float>(f))
                                  : comm.AllReduceSum(std::span<double>(d));
    if (sum.code() != StatusCode::kInvalidArgument) return sum.WithPrefix("AllReduceSum");
    std::vector<int64_t> i(4, 1);
    std::vector<Bf16> b(4);
    Status bcast = comm.rank() == 0 ? comm.Broadcast(std::span<int64_t>(i), 0)
                                    : comm.Broadcast(std::span<Bf16>(b), 0);
    if (bcast.code() != StatusCode::kInvalidArgument) return bcast.WithPrefix("Broadcast");
    std::vector<int64_t> counts = {2, comm.rank() == 0 ? 2 : 1};
    std::vector<float> send(comm.rank() == 0 ? 4 : 3), recv(2);
    Status rs =
        comm.ReduceScatterV(send, std::span<float>(recv).first(counts[comm.rank()]), counts);
    if (rs.code() != StatusCode::kInvalidArgument) return rs.WithPrefix("ReduceScatterV counts");
    if (!comm.broken().ok()) return core::Internal("broken after a detected mismatch");
    return comm.Barrier();
  });
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(InProcessCommunicator, ExitedRankMakesWaitersUnavailable) {
  std::vector<Status> results = OnRanks(3, [](Communicator& comm) -> Status {
    if (comm.rank() == 2) return Status::Ok();  // leaves without taking part
    std::vector<float> buffer(4);
    Status recv = comm.Recv(buffer, 2, 0);
    if (recv.code() != StatusCode::kUnavailable) return recv.WithPrefix("Recv");
    Status barrier = comm.Barrier();
    if (barrier.code() != StatusCode::kUnavailable) return barrier.WithPrefix("Barrier");
    Status after = comm.Barrier();
    if (after.code() != StatusCode::kFailedPrecondition) return after.WithPrefix("after");
    return Status::Ok();
  });
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(InProcessCommunicator, SubWithAnExitedMemberIsUnavailable) {
  std::vector<Status> results = OnRanks(2, [](Communicator& comm) -> Status {
    if (comm.rank() == 1) return Status::Ok();
    StatusOr<Communicator*> sub = comm.Sub({0, 1});
    if (sub.status().code() != StatusCode::kUnavailable) {
      return core::Internal("expected Unavailable, got " + sub.status().ToString());
    }
    return Status::Ok();
  });
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(InProcessCommunicator, SendsAreSynchronousAndCancelWithdrawsAReceive) {
  std::vector<Status> results = OnRanks(2, [](Communicator& comm) -> Status {
    std::vector<float> data = {1, 2, 3};
    if (comm.rank() == 0) {
      ASSIGN_OR_RETURN(Request send, comm.ISend(data, 1, 5));
      ASSIGN_OR_RETURN(bool done, send.Test());
      if (done) return core::Internal("send completed before the receive was posted");
      RETURN_IF_ERROR(comm.Barrier());  // rank 1 posts its receive after this
      RETURN_IF_ERROR(send.Wait());
      RETURN_IF_ERROR(comm.Barrier());
      return comm.Send(data, 1, 6);
    }
    std::vector<float> got(3, 0.0f), withdrawn(3, -1.0f), later(3, 0.0f);
    RETURN_IF_ERROR(comm.Barrier());
    RETURN_IF_ERROR(comm.Recv(got, 0, 5));
    {
      ASSIGN_OR_RETURN(Request r, comm.IRecv(withdrawn, 0, 6));
      r.Cancel();
      if (r.pending()) return core::Internal("cancelled request still pending");
    }
    RETURN_IF_ERROR(comm.Barrier());
    RETURN_IF_ERROR(comm.Recv(later, 0, 6));
    if (got != data || later != data) return core::Internal("wrong data");
    if (withdrawn != std::vector<float>(3, -1.0f)) {
      return core::Internal("a cancelled receive got data");
    }
    return Status::Ok();
  });
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(InProcessCommunicator, TruncatedReceiveIsInvalidArgument) {
  std::vector<Status> results = OnRanks(1, [](Communicator& comm) -> Status {
    std::vector<float> data(5, 1.0f), small(4);
    ASSIGN_OR_RETURN(Request send, comm.ISend(data, 0, 1));
    Status recv = comm.Recv(small, 0, 1);
    if (recv.code() != StatusCode::kInvalidArgument) return recv.WithPrefix("truncated Recv");
    return send.Wait();
  });
  EXPECT_TRUE(results[0].ok()) << results[0].ToString();
}

TEST(InProcessCommunicator, SubTimesOutWhenAMemberNeverArrives) {
  std::atomic<bool> done{false};
  std::vector<Status> results = OnRanks(2, [&](Communicator& comm) -> Status {
    if (comm.rank() == 1) {
      while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return Status::Ok();
    }
    comm.set_op_timeout_s(0.1);
    StatusOr<Communicator*> sub = comm.Sub({0, 1});
    done = true;
    if (sub.status().code() != StatusCode::kDeadlineExceeded) {
      return core::Internal("expected DeadlineExceeded, got " + sub.status().ToString());
    }
    return Status::Ok();
  });
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(InProcessCommunicatorDeathTest, AbortTerminatesTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(RunInProcessRanks(1, [](Communicator& comm) { comm.Abort(core::Internal("boom")); }),
               "aborts: Internal: boom");
}

}  // namespace
}  // namespace tessera::comm
