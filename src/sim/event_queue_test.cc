#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::sim {
namespace {

TEST(EventQueueTest, RunsByTimeThenKindThenId) {
  EventQueue q;
  std::vector<std::string> log;
  auto note = [&](std::string s) { return [&log, s] { log.push_back(s); }; };
  q.Schedule(2.0, 0, note("t2 k0 a"));
  q.Schedule(1.0, 5, note("t1 k5"));
  q.Schedule(1.0, 1, note("t1 k1 a"));
  q.Schedule(2.0, 0, note("t2 k0 b"));
  q.Schedule(1.0, 1, note("t1 k1 b"));
  q.Schedule(0.5, 9, note("t0.5 k9"));
  EXPECT_EQ(q.Run(), 6);
  EXPECT_EQ(log, (std::vector<std::string>{"t0.5 k9", "t1 k1 a", "t1 k1 b", "t1 k5", "t2 k0 a",
                                           "t2 k0 b"}));
  EXPECT_EQ(q.now_s(), 2.0);
}

TEST(EventQueueTest, SameScheduleSameOrderEveryRun) {
  auto run = [] {
    EventQueue q;
    std::vector<int> order;
    for (int i = 0; i < 50; ++i)
      q.Schedule((i * 7) % 5, (i * 3) % 2, [&order, i] { order.push_back(i); });
    q.Run();
    return order;
  };
  const std::vector<int> a = run();
  EXPECT_EQ(a, run());
  ASSERT_EQ(a.size(), 50u);
  EXPECT_EQ(a[0], 0);  // time 0, kind 0, lowest id
}

TEST(EventQueueTest, CancelHandlersAndRunUntil) {
  EventQueue q;
  std::vector<double> seen;
  const EventId gone = q.Schedule(1.0, 0, [&] { seen.push_back(-1); });
  q.Schedule(2.0, 0, [&] {
    seen.push_back(q.now_s());
    q.Schedule(q.now_s() + 3.0, 0, [&] { seen.push_back(q.now_s()); });  // chained
  });
  EXPECT_TRUE(q.Cancel(gone));
  EXPECT_FALSE(q.Cancel(gone));
  EXPECT_EQ(q.pending(), 1u);
  EXPECT_EQ(q.RunUntil(4.0), 1);
  EXPECT_EQ(q.now_s(), 4.0);
  EXPECT_EQ(seen, (std::vector<double>{2.0}));
  EXPECT_EQ(q.Run(), 1);
  EXPECT_EQ(seen, (std::vector<double>{2.0, 5.0}));
  EXPECT_FALSE(q.Step());
}

}  // namespace
}  // namespace tessera::sim
