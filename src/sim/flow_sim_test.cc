#include "sim/flow_sim.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::sim {
namespace {

FlowSpec F(std::vector<int> resources, double bytes, double latency_s, double release_s,
           std::vector<int> deps) {
  FlowSpec f;
  f.resources = std::move(resources);
  f.bytes = bytes;
  f.latency_s = latency_s;
  f.release_s = release_s;
  f.deps = std::move(deps);
  return f;
}

TEST(FlowSim, OneFlowIsReleasePlusBytesOverBandwidthPlusLatency) {
  const std::vector<double> bw = {100.0};
  const std::vector<FlowSpec> flows = {F({0}, 500.0, 2.0, 1.0, {})};
  auto t = SimulateFlows(bw, flows);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t->start_s[0], 1.0);
  EXPECT_DOUBLE_EQ(t->arrival_s[0], 1.0 + 5.0 + 2.0);
}

TEST(FlowSim, MaxMinSharingAndSpeedUpWhenAFlowLeaves) {
  // A crosses {0: 10 B/s, 1: 4 B/s}, B crosses {0}. Progressive filling: both grow to 4
  // (resource 1 saturates A), then B takes the rest of resource 0: A 4 B/s, B 6 B/s.
  // A has 40 B (10 s); B has 90 B: 60 B in the first 10 s, then alone at 10 B/s: 3 s more.
  const std::vector<double> bw = {10.0, 4.0};
  const std::vector<FlowSpec> flows = {F({0, 1}, 40.0, 0.0, 0.0, {}), F({0}, 90.0, 0.0, 0.0, {})};
  auto t = SimulateFlows(bw, flows);
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR(t->arrival_s[0], 10.0, 1e-9);
  EXPECT_NEAR(t->arrival_s[1], 13.0, 1e-9);
}

TEST(FlowSim, DependenciesChainArrivals) {
  // B starts when A arrives (5 + 1); C has no bytes: B's arrival + latency.
  const std::vector<double> bw = {1.0, 2.0};
  const std::vector<FlowSpec> flows = {F({0}, 5.0, 1.0, 0.0, {}), F({1}, 4.0, 0.5, 0.0, {0}),
                                       F({}, 0.0, 0.25, 0.0, {1})};
  auto t = SimulateFlows(bw, flows);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t->arrival_s[0], 6.0);
  EXPECT_DOUBLE_EQ(t->start_s[1], 6.0);
  EXPECT_DOUBLE_EQ(t->arrival_s[1], 6.0 + 2.0 + 0.5);
  EXPECT_DOUBLE_EQ(t->arrival_s[2], 8.5 + 0.25);
}

TEST(FlowSim, AQueuedFlowStartsWhenThePreviousOneLeavesNotWhenItArrives) {
  // Two messages of one stream on one link: the second transmits after the first's last
  // byte (t = 5), not after its arrival (t = 7), and never shares the link with it.
  const std::vector<double> bw = {2.0};
  std::vector<FlowSpec> flows = {F({0}, 10.0, 2.0, 0.0, {}), F({0}, 4.0, 2.0, 0.0, {})};
  flows[1].tx_after = {0};
  auto t = SimulateFlows(bw, flows);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t->arrival_s[0], 7.0);
  EXPECT_DOUBLE_EQ(t->start_s[1], 5.0);
  EXPECT_DOUBLE_EQ(t->arrival_s[1], 5.0 + 2.0 + 2.0);
}

TEST(FlowSim, BadInputIsAnError) {
  const std::vector<double> bw = {1.0};
  EXPECT_FALSE(SimulateFlows(bw, std::vector<FlowSpec>{F({1}, 1.0, 0, 0, {})}).ok());
  EXPECT_FALSE(SimulateFlows(bw, std::vector<FlowSpec>{F({0}, -1.0, 0, 0, {})}).ok());
  EXPECT_FALSE(SimulateFlows(bw, std::vector<FlowSpec>{F({0}, 1.0, 0, 0, {3})}).ok());
  const std::vector<FlowSpec> cycle = {F({0}, 1.0, 0, 0, {1}), F({0}, 1.0, 0, 0, {0})};
  auto c = SimulateFlows(bw, cycle);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cycle"), std::string::npos);
  const std::vector<double> zero = {0.0};
  EXPECT_FALSE(SimulateFlows(zero, std::vector<FlowSpec>{F({0}, 1.0, 0, 0, {})}).ok());
}

}  // namespace
}  // namespace tessera::sim
