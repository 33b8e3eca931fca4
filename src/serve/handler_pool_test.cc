#include "serve/handler_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "serve/heap_policy.h"

namespace tessera::serve {
namespace {

// Polls `done` for up to 10 s (the pool's threads exit on their own time).
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// Tasks that block until Open().
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> entered{0}, ran{0};
  void Wait() {
    ++entered;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return open; });
    ++ran;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu);
      open = true;
    }
    cv.notify_all();
  }
};

TEST(HandlerPool, StartsThreadsOnDemandUpToTheMost) {
  HandlerPool pool(3, 0);
  EXPECT_EQ(pool.threads(), 0);
  Gate gate;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(pool.Submit([&] { gate.Wait(); }));
  ASSERT_TRUE(Eventually([&] { return gate.entered.load() == 3; }));
  EXPECT_EQ(pool.threads(), 3);
  EXPECT_EQ(pool.busy(), 5);  // 3 running, 2 queued
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return gate.ran.load() == 5 && pool.busy() == 0; }));
  EXPECT_EQ(pool.threads(), 3);  // idle_exit_s 0: threads stay
  EXPECT_EQ(pool.Stop(1), 0);
  EXPECT_FALSE(pool.Submit([] {}));
}

TEST(HandlerPool, IdleThreadsExitAndTheLastCallsOnIdle) {
  std::atomic<int> idle_calls{0};
  HandlerPool pool(8, 0.05, [&] { ++idle_calls; });
  for (int round = 0; round < 3; ++round) {
    Gate gate;
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(pool.Submit([&] { gate.Wait(); }));
    ASSERT_TRUE(Eventually([&] { return gate.entered.load() == 8; }));
    EXPECT_EQ(pool.threads(), 8);
    gate.Open();
    // Every thread exits once idle; the last one calls on_idle, once per idle period.
    ASSERT_TRUE(Eventually([&] { return pool.threads() == 0 && idle_calls.load() == round + 1; }))
        << "round " << round << ": threads " << pool.threads() << ", idle calls "
        << idle_calls.load();
    EXPECT_EQ(pool.idle_calls(), round + 1);
  }
  // A task after the pool emptied starts a thread again.
  std::atomic<bool> ran{false};
  ASSERT_TRUE(pool.Submit([&] { ran = true; }));
  ASSERT_TRUE(Eventually([&] { return ran.load(); }));
  EXPECT_EQ(pool.Stop(1), 0);
}

TEST(HandlerPool, StopDetachesATaskPastTheDeadline) {
  HandlerPool pool(2, 0.05);
  auto gate = std::make_shared<Gate>();
  ASSERT_TRUE(pool.Submit([gate] { gate->Wait(); }));
  ASSERT_TRUE(Eventually([&] { return gate->entered.load() == 1; }));
  EXPECT_EQ(pool.Stop(0.01), 1);  // returns although the task still runs
  gate->Open();
  ASSERT_TRUE(Eventually([&] { return gate->ran.load() == 1; }));
}

TEST(HeapPolicy, AppliesValidOptionsAndNamesABadField) {
  EXPECT_TRUE(ApplyHeapOptions(HeapOptions{}).ok());
  HeapOptions glibc_defaults;
  glibc_defaults.malloc_arenas = 0;
  glibc_defaults.trim_threshold_bytes = 0;
  glibc_defaults.mmap_threshold_bytes = 0;
  EXPECT_TRUE(ValidateHeapOptions(glibc_defaults).ok());
  HeapOptions bad;
  bad.malloc_arenas = -1;
  const core::Status st = ApplyHeapOptions(bad);
  EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("malloc_arenas = -1"), std::string::npos) << st.message();
  bad = HeapOptions{};
  bad.trim_threshold_bytes = int64_t{1} << 40;
  EXPECT_NE(ValidateHeapOptions(bad).message().find("trim_threshold_bytes"), std::string::npos);
  const core::Json stats = HeapStats();
  for (const char* key : {"arena_bytes", "in_use_bytes", "free_bytes", "mmapped_bytes"}) {
    EXPECT_TRUE(stats.contains(key)) << key;
  }
  ReleaseFreeHeap();  // callable at any time
}

}  // namespace
}  // namespace tessera::serve
