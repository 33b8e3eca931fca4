#include "xema/planner/serving_sim.h"

#include <gtest/gtest.h>

namespace tessera::xema {
namespace {

ServingPlan OneEntryPlan(int concurrency, int64_t arena_bytes) {
  ServingPlan p;
  p.budget_bytes = 1000;
  p.model_weight_bytes["tiny-t2i"] = 100;
  ServingPlanEntry e;
  e.concurrency = concurrency;
  e.arena_bytes = arena_bytes;
  p.entries.push_back(e);
  return p;
}

SimArrival At(double t, double work, int entry = 0) {
  SimArrival a;
  a.at_s = t;
  a.work_s = work;
  a.route = entry < 0 ? Route{} : Route{RouteKind::kExact, entry};
  return a;
}

ServingSimOptions Opts(int64_t region = 900, std::vector<std::vector<double>> pairs = {}) {
  ServingSimOptions o;
  o.region_bytes = region;
  o.pair_speedup = std::move(pairs);
  return o;
}

TEST(ServingSimTest, OneAtATimeIsFcfs) {
  auto r = SimulateServing(OneEntryPlan(1, 100), Opts(), {At(0, 1), At(0.5, 1), At(5, 0.25)});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_DOUBLE_EQ((*r)[0].finish_s, 1);
  EXPECT_DOUBLE_EQ((*r)[1].start_s, 1);
  EXPECT_DOUBLE_EQ((*r)[1].latency_s, 1.5);
  EXPECT_DOUBLE_EQ((*r)[2].latency_s, 0.25);
  for (const SimRequest& s : *r) EXPECT_TRUE(s.served);
}

TEST(ServingSimTest, ConcurrentRequestsShareTheCore) {
  // Two at once, no gain: each at half speed, both done at 2 s.
  auto r = SimulateServing(OneEntryPlan(2, 100), Opts(), {At(0, 1), At(0, 1)});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ((*r)[0].finish_s, 2);
  EXPECT_DOUBLE_EQ((*r)[1].finish_s, 2);
  // A measured aggregate speed-up of 1.5 for the pair: each at 0.75, done at 4/3 s.
  r = SimulateServing(OneEntryPlan(2, 100), Opts(900, {{1.5}}), {At(0, 1), At(0, 1)});
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR((*r)[0].finish_s, 4.0 / 3, 1e-12);
  // A short request beside a long one: A alone for 0.5 s (1.5 s left), then both at half speed;
  // B (0.5 s) finishes at 1.5, A's last 1.0 s runs alone: done at 2.5.
  r = SimulateServing(OneEntryPlan(2, 100), Opts(), {At(0, 2), At(0.5, 0.5)});
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR((*r)[1].finish_s, 1.5, 1e-12);
  EXPECT_NEAR((*r)[1].latency_s, 1.0, 1e-12);
  EXPECT_NEAR((*r)[0].finish_s, 2.5, 1e-12);
}

TEST(ServingSimTest, PairSpeedupsDependOnWhoShares) {
  // Two classes: a heavy pair runs at 0.5 together, a heavy and a light one at 0.9, two
  // light ones at 1. Heavy (class 0, 1 s) and light (class 1, 0.1 s) start together: each at
  // 0.45; the light one ends at 0.1 / 0.45 s, the heavy one then alone.
  const std::vector<std::vector<double>> pairs = {{0.5, 0.9}, {0.9, 1.0}};
  SimArrival heavy = At(0, 1), light = At(0, 0.1);
  light.template_index = 1;
  auto r = SimulateServing(OneEntryPlan(2, 100), Opts(900, pairs), {heavy, light});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double t_light = 0.1 / 0.45;
  EXPECT_NEAR((*r)[1].finish_s, t_light, 1e-12);
  EXPECT_NEAR((*r)[0].finish_s, t_light + (1 - 0.45 * t_light), 1e-12);
  // Two heavy ones: 0.25 each, both done at 4 s.
  r = SimulateServing(OneEntryPlan(2, 100), Opts(900, pairs), {heavy, heavy});
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR((*r)[0].finish_s, 4, 1e-12);
  // Three: f = mean of the three pairs' speed-ups, each at f / 3.
  r = SimulateServing(OneEntryPlan(3, 100), Opts(900, pairs), {heavy, heavy, light});
  ASSERT_TRUE(r.ok());
  const double f = (0.5 + 0.9 + 0.9) / 3;
  EXPECT_NEAR((*r)[2].finish_s, 0.1 / (f / 3), 1e-12);
}

TEST(ServingSimTest, ArenasMustFitTheRegionAndConcurrencyBinds) {
  // Two requests allowed, but two 600-byte arenas do not fit 900 bytes: one at a time.
  auto r = SimulateServing(OneEntryPlan(2, 600), Opts(900), {At(0, 1), At(0, 1)});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ((*r)[1].start_s, 1);
  EXPECT_DOUBLE_EQ((*r)[1].finish_s, 2);
  // Concurrency 3 with room for all three.
  r = SimulateServing(OneEntryPlan(3, 300), Opts(900), {At(0, 1), At(0, 1), At(0, 1), At(0, 1)});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ((*r)[0].finish_s, 3);
  EXPECT_DOUBLE_EQ((*r)[3].start_s, 3);
  EXPECT_DOUBLE_EQ((*r)[3].finish_s, 4);
  // An arena larger than the region is never admitted: not served, not rejected.
  r = SimulateServing(OneEntryPlan(1, 1000), Opts(900), {At(0, 1)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].served);
  EXPECT_FALSE((*r)[0].rejected);
}

TEST(ServingSimTest, QueueFullRejectsAndOverheadAdds) {
  ServingSimOptions o = Opts();
  o.queue_capacity = 1;
  o.overhead_s = 0.01;
  auto r = SimulateServing(OneEntryPlan(1, 100), o, {At(0, 1), At(0, 1), At(0, 1), At(3, 1)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].rejected);
  EXPECT_FALSE((*r)[1].rejected);
  EXPECT_TRUE((*r)[2].rejected);
  EXPECT_DOUBLE_EQ((*r)[1].latency_s, 2.01);
  EXPECT_DOUBLE_EQ((*r)[3].latency_s, 1.01);
}

TEST(ServingSimTest, FallbackRunsAloneAndStrictFcfsHoldsTheQueue) {
  // Entry 0 may run 2 at once; a fallback request (route -1) waits for the device to empty,
  // and the entry request behind it waits too (FCFS).
  auto r = SimulateServing(OneEntryPlan(2, 100), Opts(),
                           {At(0, 1), At(0.1, 1, -1), At(0.2, 1), At(0.3, 0.5, 0)});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ((*r)[1].start_s, 1);   // after request 0
  EXPECT_DOUBLE_EQ((*r)[1].finish_s, 2);  // alone
  EXPECT_DOUBLE_EQ((*r)[2].start_s, 2);
  EXPECT_DOUBLE_EQ((*r)[3].start_s, 2);
  EXPECT_NEAR((*r)[3].finish_s, 3, 1e-12);  // 0.5 s at half speed
  EXPECT_NEAR((*r)[2].finish_s, 3.5, 1e-12);
}

TEST(ServingSimTest, DevicesTakeTheLeastBusyThatAdmits) {
  ServingSimOptions o = Opts();
  o.devices = 2;
  auto r = SimulateServing(OneEntryPlan(1, 100), o, {At(0, 1), At(0, 1), At(0, 1)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].device, 0);
  EXPECT_EQ((*r)[1].device, 1);
  EXPECT_EQ((*r)[2].device, 0);
  EXPECT_DOUBLE_EQ((*r)[2].finish_s, 2);
  // Two slots per device: the second request still goes to the idle device 1 (not beside the
  // first on device 0), the third to device 0, sharing it: 1 s alone-equivalent each.
  r = SimulateServing(OneEntryPlan(2, 100), o, {At(0, 1), At(0, 1), At(0, 1)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[1].device, 1);
  EXPECT_EQ((*r)[2].device, 0);
  EXPECT_DOUBLE_EQ((*r)[1].finish_s, 1);
  EXPECT_DOUBLE_EQ((*r)[0].finish_s, 2);
}

TEST(ServingSimTest, SequenceParallelRequestsRunAsGangs) {
  // Entry 0: SP 2 (a gang over devices 0-1 or 2-3), one request per device; entry 1: SP 1.
  ServingPlan p = OneEntryPlan(1, 100);
  p.entries[0].sp_degree = 2;
  ServingPlanEntry single;
  single.concurrency = 1;
  single.arena_bytes = 100;
  p.entries.push_back(single);
  ServingSimOptions o = Opts();
  o.devices = 4;
  // Two gangs fill the four devices; the third gang waits for the first (done at 1 s).
  auto r = SimulateServing(p, o, {At(0, 1), At(0, 1), At(0, 1)});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].device, 0);
  EXPECT_EQ((*r)[1].device, 2);
  EXPECT_DOUBLE_EQ((*r)[2].start_s, 1);
  EXPECT_DOUBLE_EQ((*r)[2].finish_s, 2);
  // A single-device request on device 0 beside a gang on 0-1 (two devices: one group): device
  // 0 shares itself (0.5 each), so the gang runs at its slowest member's 0.5 as well: the
  // single request (0.5 s of work) ends at 1 s, then the gang (0.5 s left) runs alone: done at
  // 1.5 s. (Entries count their slots separately: c = 1 each lets both onto device 0.)
  o.devices = 2;
  r = SimulateServing(p, o, {At(0, 0.5, 1), At(0, 1, 0)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].device, 0);
  EXPECT_EQ((*r)[1].device, 0);
  EXPECT_NEAR((*r)[0].finish_s, 1.0, 1e-12);
  EXPECT_NEAR((*r)[1].finish_s, 1.5, 1e-12);
  // With four devices the gang takes the idle group 2-3 instead: both done by 1 s.
  o.devices = 4;
  r = SimulateServing(p, o, {At(0, 0.5, 1), At(0, 1, 0)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[1].device, 2);
  EXPECT_NEAR((*r)[0].finish_s, 0.5, 1e-12);
  EXPECT_NEAR((*r)[1].finish_s, 1.0, 1e-12);
  // An SP degree that does not divide the devices is refused.
  o.devices = 3;
  r = SimulateServing(p, o, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("entries[0].sp_degree: got 2, must divide the 3 devices"),
            std::string::npos)
      << r.status().message();
}

TEST(ServingSimTest, ABatchTakesWaitingRequestsOfItsEntryIntoOneRun) {
  // One slot, batch 2: a run of 1 takes 1 s, a run of 2 takes 1.5 s.
  ServingPlan p = OneEntryPlan(1, 100);
  p.entries[0].batch = 2;
  ServingSimOptions o = Opts();
  o.batch_work_s = {{1.0, 1.5}};
  // The first starts alone (nothing waits), the next two run together once it is done, the
  // fourth alone after them: 1, 2.5, 2.5, 3.5.
  auto r = SimulateServing(p, o, {At(0, 1), At(0, 1), At(0.1, 1), At(0.2, 1)});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ((*r)[0].finish_s, 1);
  EXPECT_DOUBLE_EQ((*r)[1].start_s, 1);
  EXPECT_DOUBLE_EQ((*r)[2].start_s, 1);
  EXPECT_DOUBLE_EQ((*r)[1].finish_s, 2.5);
  EXPECT_DOUBLE_EQ((*r)[2].finish_s, 2.5);
  EXPECT_DOUBLE_EQ((*r)[3].start_s, 2.5);
  EXPECT_DOUBLE_EQ((*r)[3].finish_s, 3.5);
  // Only requests routed exactly to the entry join: a fallback request waiting before them
  // is the head at t = 1, runs alone (the device held), and the two after it run together:
  // 1, 2, 3.5, 3.5.
  r = SimulateServing(p, o, {At(0, 1), At(0, 1, -1), At(0, 1), At(0, 1)});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ((*r)[0].finish_s, 1);
  EXPECT_DOUBLE_EQ((*r)[1].finish_s, 2);
  EXPECT_DOUBLE_EQ((*r)[2].finish_s, 3.5);
  EXPECT_DOUBLE_EQ((*r)[3].finish_s, 3.5);
  // A batch entry without the seconds of its batch sizes is refused.
  o.batch_work_s = {{1.0}};
  r = SimulateServing(p, o, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("batch_work_s[0]: entry 0 has batch 2"), std::string::npos)
      << r.status().message();
}

TEST(ServingSimTest, BadInputIsNamed) {
  const ServingPlan p = OneEntryPlan(1, 100);
  auto r = SimulateServing(p, Opts(), {At(1, 1), At(0, 1)});
  EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("arrivals[1]"), std::string::npos);
  EXPECT_FALSE(SimulateServing(p, Opts(), {At(0, 1, 3)}).ok());
  EXPECT_FALSE(SimulateServing(p, Opts(0), {}).ok());
  EXPECT_FALSE(SimulateServing(p, Opts(900, {{0}}), {}).ok());
  EXPECT_FALSE(SimulateServing(p, Opts(900, {{1, 0.5}, {0.7, 1}}), {}).ok());  // not symmetric
  EXPECT_TRUE(SimulateServing(p, Opts(900, {{1}}), {At(0, 1)}).ok());  // class 0 is in range
  SimArrival bad_class = At(0, 1);
  bad_class.template_index = 1;
  EXPECT_FALSE(SimulateServing(p, Opts(900, {{1}}), {bad_class}).ok());
}

}  // namespace
}  // namespace tessera::xema
