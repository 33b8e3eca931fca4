// AmCommunicator in one process (ranks are threads, each with its own AmWorld and transport):
// the Communicator conformance suite on the fake transport (1-4 ranks, with and without an op
// timeout) and on ucx (3 ranks), and the elastic checks (am_communicator_conformance.h) on both.
#include "comm/am_communicator.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "comm/am_communicator_conformance.h"
#include "comm/conformance.h"

namespace tessera::comm {
namespace {

using core::StatusCode;

testing::AmTransportFactory Factory(const std::string& backend) {
  return [backend] { return MakeAmTransport(backend); };
}

// Runs fn(world communicator of rank r) on n threads over `backend`; world ids 0..n-1.
Status OnAmRanks(const std::string& backend, int n,
                 const std::function<Status(AmCommunicator&)>& fn) {
  std::vector<int> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = i;
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<AmWorld>> worlds,
                   testing::MakeConnectedAmWorlds(Factory(backend), ids));
  return testing::AllOk(testing::RunOnThreads(n, [&](int r) -> Status {
    ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm,
                     AmCommunicator::Create(worlds[r], ids, /*epoch=*/1));
    return fn(*comm);
  }));
}

std::vector<std::string> CheckNames() {
  std::vector<std::string> names;
  for (const auto& c : testing::ConformanceChecks()) names.push_back(c.name);
  return names;
}

testing::CheckFn FindCheck(const std::string& name) {
  for (const auto& c : testing::ConformanceChecks()) {
    if (c.name == name) return c.fn;
  }
  return nullptr;
}

// ---- The Communicator conformance suite ------------------------------------------------

class AmConformanceFake : public ::testing::TestWithParam<std::tuple<int, std::string, bool>> {};

TEST_P(AmConformanceFake, Passes) {
  const auto& [n, name, timed] = GetParam();
  const testing::CheckFn fn = FindCheck(name);
  ASSERT_TRUE(fn != nullptr);
  const Status status = OnAmRanks("fake", n, [&](AmCommunicator& comm) {
    if (timed) comm.set_op_timeout_s(30.0);
    return fn(comm, 1234 + n);
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

INSTANTIATE_TEST_SUITE_P(AllChecks, AmConformanceFake,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::ValuesIn(CheckNames()), ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<1>(info.param) + "_" +
                                  std::to_string(std::get<0>(info.param)) + "ranks" +
                                  (std::get<2>(info.param) ? "_timed" : "");
                         });

class AmConformanceUcx : public ::testing::TestWithParam<std::string> {};

TEST_P(AmConformanceUcx, PassesOn3Ranks) {
  const testing::CheckFn fn = FindCheck(GetParam());
  ASSERT_TRUE(fn != nullptr);
  const Status status = OnAmRanks("ucx", 3, [&](AmCommunicator& comm) {
    comm.set_op_timeout_s(60.0);  // a hang guard only
    return fn(comm, 99);
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

INSTANTIATE_TEST_SUITE_P(AllChecks, AmConformanceUcx, ::testing::ValuesIn(CheckNames()));

TEST(AmCommunicator, CollectiveDeadlineBreaksOnlyTheTimedOutCommunicator) {
  for (int n : {2, 3, 4}) {
    const Status status = OnAmRanks(
        "fake", n, [](AmCommunicator& comm) { return testing::CheckCollectiveDeadline(comm, 7); });
    EXPECT_TRUE(status.ok()) << n << " ranks: " << status.ToString();
  }
}

// ---- The elastic checks on both transports -----------------------------------------------

std::vector<std::string> ElasticNames() {
  std::vector<std::string> names;
  for (const auto& c : testing::AmCommElasticChecks()) names.push_back(c.name);
  return names;
}

class AmElastic : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(AmElastic, Passes) {
  const auto& [backend, name] = GetParam();
  for (const auto& c : testing::AmCommElasticChecks()) {
    if (c.name != name) continue;
    const Status status = c.fn(Factory(backend));
    EXPECT_TRUE(status.ok()) << status.ToString();
    return;
  }
  FAIL() << "no check " << name;
}

INSTANTIATE_TEST_SUITE_P(AllChecks, AmElastic,
                         ::testing::Combine(::testing::Values("fake", "ucx"),
                                            ::testing::ValuesIn(ElasticNames())),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// ---- Creation and the rest of the contract -------------------------------------------------

TEST(AmCommunicator, CreateChecksItsArguments) {
  auto worlds = testing::MakeConnectedAmWorlds(Factory("fake"), {3});
  ASSERT_TRUE(worlds.ok()) << worlds.status().ToString();
  const auto& world = (*worlds)[0];
  EXPECT_EQ(AmCommunicator::Create(nullptr, {3}, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AmCommunicator::Create(world, {}, 1).status().code(), StatusCode::kInvalidArgument);
  const Status not_member = AmCommunicator::Create(world, {1, 2}, 1).status();
  EXPECT_EQ(not_member.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(not_member.message().find("world id 3"), std::string::npos) << not_member.message();
  auto comm = AmCommunicator::Create(world, {3}, 1);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ((*comm)->rank(), 0);
  EXPECT_EQ((*comm)->world_rank(), 3);
  EXPECT_FALSE((*comm)->ranks_share_address_space());
  EXPECT_TRUE((*comm)->Barrier().ok());
}

TEST(AmCommunicator, WorldCreationChecksItsArguments) {
  EXPECT_EQ(AmWorld::Create(nullptr, 0, "127.0.0.1", 0).status().code(),
            StatusCode::kInvalidArgument);
  auto t = MakeAmTransport("fake");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(AmWorld::Create(std::move(t).value(), -1, "127.0.0.1", 0).status().code(),
            StatusCode::kInvalidArgument);
  auto listening = MakeAmTransport("fake");
  ASSERT_TRUE(listening.ok());
  ASSERT_TRUE((*listening)->Listen("127.0.0.1", 0).ok());
  const Status already = AmWorld::Create(std::move(listening).value(), 0, "127.0.0.1", 0).status();
  EXPECT_EQ(already.code(), StatusCode::kInvalidArgument) << already.ToString();
  auto world = testing::MakeAmWorld(Factory("fake"), 0);
  ASSERT_TRUE(world.ok()) << world.status().ToString();
  EXPECT_FALSE((*world)->address().empty());
  EXPECT_EQ((*world)->address_book().at(0), (*world)->address());
  EXPECT_EQ((*world)->backend_name(), "fake");
}

TEST(AmCommunicator, SendsAreEagerAndATruncatedReceiveIsInvalidArgument) {
  const Status status = OnAmRanks("fake", 2, [](AmCommunicator& comm) -> Status {
    std::vector<float> data = {1, 2, 3};
    if (comm.rank() == 0) {
      ASSIGN_OR_RETURN(Request send, comm.ISend(data, 1, 5));
      ASSIGN_OR_RETURN(bool done, send.Test());
      if (!done) return core::Internal("an eager send is not complete at once");
      return comm.Barrier();
    }
    std::vector<float> small(2);
    const Status recv = comm.Recv(small, 0, 5);
    if (recv.code() != StatusCode::kInvalidArgument) return recv.WithPrefix("truncated Recv");
    return comm.Barrier();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(AmCommunicator, MismatchedCollectivesAreInvalidArgumentWhereNoticed) {
  const Status status = OnAmRanks("fake", 2, [](AmCommunicator& comm) -> Status {
    // Rank 0 broadcasts 3 elements, rank 1 expects 4: the receiver notices.
    std::vector<float> v(comm.rank() == 0 ? 3 : 4, 1.0f);
    const Status s = comm.Broadcast(std::span<float>(v), 0);
    if (comm.rank() == 1 && s.code() != StatusCode::kInvalidArgument) {
      return s.WithPrefix("Broadcast size mismatch");
    }
    if (comm.rank() == 0 && !s.ok()) return s.WithPrefix("Broadcast root");
    std::vector<double> d(2, 1.0);
    std::vector<float> f(2, 1.0f);
    const Status t = comm.rank() == 0 ? comm.AllReduceSum(std::span<double>(d))
                                      : comm.AllReduceSum(std::span<float>(f));
    if (t.code() != StatusCode::kInvalidArgument) return t.WithPrefix("AllReduceSum dtype");
    return comm.Barrier();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(AmCommunicatorDeathTest, AbortEndsThisProcessWithExitCode1) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        (void)OnAmRanks("fake", 1,
                        [](AmCommunicator& comm) -> Status { comm.Abort(core::Internal("boom")); });
      },
      ::testing::ExitedWithCode(1), "world rank 0 aborts: Internal: boom");
}

}  // namespace
}  // namespace tessera::comm
