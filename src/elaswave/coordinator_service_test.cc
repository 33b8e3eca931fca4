// The coordinator and its clients on a real transport (the in-process "fake" backend and UCX):
// registration, commit, a worker's death seen through the transport, a coordinator restarted
// at a new address that workers find through the address file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "elaswave/coordinator.h"
#include "elaswave/coordinator_client.h"

namespace tessera::elaswave {
namespace {

class CoordinatorServiceTest : public ::testing::TestWithParam<std::string> {};

// Waits (up to a hang guard) for the next message of `kind`, skipping others.
ControlMessage Expect(CoordinatorClient& c, ControlKind kind) {
  for (int i = 0; i < 200; ++i) {
    auto m = c.Next(0.5);
    if (!m.ok()) continue;
    if (m->kind == kind) return *m;
  }
  ADD_FAILURE() << "no " << ControlKindName(kind);
  return {};
}

std::unique_ptr<CoordinatorClient> Client(const std::string& transport, int world,
                                          const std::string& address_file,
                                          std::function<ControlMessage()> reg = nullptr) {
  CoordinatorClientOptions o;
  o.world = world;
  o.transport = transport;
  o.address_file = address_file;
  o.heartbeat_s = 0.05;
  auto c = CoordinatorClient::Connect(o, std::move(reg), nullptr);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

void WriteAddress(const std::string& path, const std::string& address) {
  std::ofstream(path + ".tmp") << address << "\n";
  std::filesystem::rename(path + ".tmp", path);
}

TEST_P(CoordinatorServiceTest, CommitThenDeathThenResume) {
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("ew_coord_" + GetParam() + "_1_" + std::to_string(::getpid())))
                               .string();
  CoordinatorServiceOptions o;
  o.core.world_size = 3;
  o.core.heartbeat_timeout_s = 30;  // deaths come from the transport here
  o.transport = GetParam();
  auto coord = Coordinator::Start(o);
  ASSERT_TRUE(coord.ok()) << coord.status().ToString();
  WriteAddress(file, (*coord)->address());
  int exit_code = -1;
  std::thread run([&] { exit_code = (*coord)->Run(); });
  std::vector<std::unique_ptr<CoordinatorClient>> w;
  for (int i = 0; i < 3; ++i) w.push_back(Client(GetParam(), i, file));
  for (auto& c : w) EXPECT_EQ(Expect(*c, ControlKind::kRoster).epoch, 0);
  for (auto& c : w) {
    ControlMessage v;
    v.kind = ControlKind::kVote;
    v.step = 0;
    v.digest = 11;
    ASSERT_TRUE(c->Send(v).ok());
  }
  for (auto& c : w) EXPECT_EQ(Expect(*c, ControlKind::kCommit).step, 0);
  // Worker 2 dies: its transport goes away with it.
  w[2].reset();
  for (int i = 0; i < 2; ++i) {
    const ControlMessage abort = Expect(*w[i], ControlKind::kAbort);
    EXPECT_EQ(abort.epoch, 1);
    EXPECT_EQ(abort.dead, (std::set<int>{2}));
    EXPECT_EQ(abort.complete_step, -1);  // nobody snapshotted step 0
  }
  for (int i = 0; i < 2; ++i) {
    ControlMessage r;
    r.kind = ControlKind::kReady;
    r.epoch = 1;
    r.digest = 12;
    ASSERT_TRUE(w[i]->Send(r).ok());
  }
  for (int i = 0; i < 2; ++i) EXPECT_EQ(Expect(*w[i], ControlKind::kResume).step, 0);
  for (int i = 0; i < 2; ++i) {
    ControlMessage d;
    d.kind = ControlKind::kDone;
    d.epoch = 1;
    ASSERT_TRUE(w[i]->Send(d).ok());
  }
  for (int i = 0; i < 2; ++i) EXPECT_EQ(Expect(*w[i], ControlKind::kShutdown).code, 0);
  run.join();
  EXPECT_EQ(exit_code, 0);
  std::filesystem::remove(file);
}

TEST_P(CoordinatorServiceTest, RestartedCoordinatorIsFoundThroughTheAddressFile) {
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("ew_coord_" + GetParam() + "_2_" + std::to_string(::getpid())))
                               .string();
  CoordinatorServiceOptions o;
  o.core.world_size = 2;
  o.core.heartbeat_timeout_s = 30;
  o.transport = GetParam();
  auto first = Coordinator::Start(o);
  ASSERT_TRUE(first.ok());
  WriteAddress(file, (*first)->address());
  std::thread run1([&] { (void)(*first)->Run(); });
  const auto reg = [] {
    ControlMessage r;
    r.epoch = 2;
    r.complete_step = 5;
    return r;
  };
  std::vector<std::unique_ptr<CoordinatorClient>> w;
  for (int i = 0; i < 2; ++i) w.push_back(Client(GetParam(), i, file, reg));
  for (auto& c : w) (void)Expect(*c, ControlKind::kRoster);
  // The coordinator dies (its workers see its connection fail); the launcher starts another.
  for (auto& c : w) {
    ControlMessage d;
    d.kind = ControlKind::kDone;
    ASSERT_TRUE(c->Send(d).ok());
  }
  for (auto& c : w) (void)Expect(*c, ControlKind::kShutdown);
  run1.join();
  first->reset();
  o.core.restarted = true;
  auto second = Coordinator::Start(o);
  ASSERT_TRUE(second.ok());
  WriteAddress(file, (*second)->address());
  std::thread run2([&] { (void)(*second)->Run(); });
  for (auto& c : w) {
    const ControlMessage abort = Expect(*c, ControlKind::kAbort);
    EXPECT_EQ(abort.epoch, 3);
    EXPECT_EQ(abort.complete_step, 5);
    EXPECT_TRUE(abort.dead.empty());
  }
  for (auto& c : w) EXPECT_GE(c->reconnects(), 1);
  for (auto& c : w) {
    ControlMessage r;
    r.kind = ControlKind::kReady;
    r.epoch = 3;
    r.digest = 1;
    ASSERT_TRUE(c->Send(r).ok());
  }
  for (auto& c : w) EXPECT_EQ(Expect(*c, ControlKind::kResume).step, 6);
  for (auto& c : w) {
    ControlMessage d;
    d.kind = ControlKind::kDone;
    d.epoch = 3;
    ASSERT_TRUE(c->Send(d).ok());
  }
  run2.join();
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Transports, CoordinatorServiceTest, ::testing::Values("fake", "ucx"));

}  // namespace
}  // namespace tessera::elaswave
