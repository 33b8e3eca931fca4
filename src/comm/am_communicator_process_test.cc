// AmCommunicator across real processes on the ucx transport: N ranks of am_communicator_peer
// on 127.0.0.1; one is SIGKILLed while the others block in an AllReduceSum. Every survivor must
// report Unavailable naming the killed world rank, then Reconfigure in place and pass the
// conformance checks, then RebuildPartial and RebuildFull (see am_communicator_peer_main.cc).
// Every process is stopped by the test (ChildProcess kills what is still running).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/child_process.h"

#ifndef TESSERA_AM_COMM_PEER_PATH
#error "TESSERA_AM_COMM_PEER_PATH must name the am_communicator_peer helper (see CMakeLists.txt)"
#endif

namespace tessera::comm {
namespace {

constexpr double kHangGuardS = 120.0;  // turns a hang into a failure; never a speed bound

// A fresh directory for the address files, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tessera_am_comm_XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool WaitUntil(const std::function<bool()>& pred) {
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kHangGuardS);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void RunKillScenario(int n, int victim) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty()) << "mkdtemp failed";
  std::vector<std::unique_ptr<core::ChildProcess>> ranks;
  for (int id = 0; id < n; ++id) {
    auto child =
        core::ChildProcess::Spawn({TESSERA_AM_COMM_PEER_PATH, dir.path(), std::to_string(id),
                                   std::to_string(n), std::to_string(victim)});
    ASSERT_TRUE(child.ok()) << child.status().ToString();
    ranks.push_back(std::move(child).value());
  }
  auto tails = [&] {
    std::string all;
    for (int id = 0; id < n; ++id) {
      all += fmt::format("\n--- rank {} ---\n{}", id, ranks[id]->StderrTail(2000));
    }
    return all;
  };
  // Everybody is in place: the victim parked, the others blocked in the AllReduceSum.
  const bool in_place = WaitUntil([&] {
    for (int id = 0; id < n; ++id) {
      if (ranks[id]->Poll().has_value()) return true;  // ended early: reported below
      const std::string want = id == victim ? "victim parked" : "entering AllReduceSum";
      if (ranks[id]->LastStderrLine() != want) return false;
    }
    return true;
  });
  ASSERT_TRUE(in_place) << "the ranks never got in place:" << tails();
  for (int id = 0; id < n; ++id) {
    ASSERT_FALSE(ranks[id]->Poll().has_value()) << "rank " << id << " ended early:" << tails();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let them block (not a bound)
  ranks[victim]->Signal(SIGKILL);
  EXPECT_EQ(ranks[victim]->Wait(), 128 + SIGKILL);

  const bool ended = WaitUntil([&] {
    for (int id = 0; id < n; ++id) {
      if (!ranks[id]->Poll().has_value()) return false;
    }
    return true;
  });
  ASSERT_TRUE(ended) << "survivors still running after " << kHangGuardS << " s:" << tails();
  const std::string named = fmt::format("world rank {} (127.0.0.1:", victim);
  for (int id = 0; id < n; ++id) {
    if (id == victim) continue;
    const std::string tail = ranks[id]->StderrTail(8000);
    EXPECT_EQ(ranks[id]->Poll().value_or(-1), 0) << "rank " << id << ":" << tails();
    EXPECT_NE(tail.find("failed: Unavailable"), std::string::npos) << tail;
    EXPECT_NE(tail.find(named), std::string::npos)
        << "rank " << id << " does not name the victim: " << tail;
    const std::string result = ranks[id]->LastStderrLine();
    EXPECT_EQ(result.rfind("RESULT ok", 0), 0u) << tail;
    std::printf("[measured, %d processes, rank %d] %s\n", n, id, result.c_str());
  }
}

TEST(AmCommunicatorProcesses, KilledMiddleRankFailsSurvivorsWhoReconfigure) {
  RunKillScenario(4, 2);
}

TEST(AmCommunicatorProcesses, KilledRankZeroFailsSurvivorsWhoReconfigure) { RunKillScenario(4, 0); }

}  // namespace
}  // namespace tessera::comm
