// compass/collective_bound.h: the bound by hand on a6000x8's first socket (NVLink pairs joined
// by PCIe through cpu0) and on a two-device link, and never above the model's time.
#include "compass/collective_bound.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/units.h"
#include "hw/ring_order.h"

namespace tessera::compass {
namespace {

hw::Topology BoundPreset(const std::string& name) {
  auto t = hw::TopologyPreset(name);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

TEST(CollectiveBound, ByHandOnTheA6000Socket) {
  hw::Topology t = BoundPreset("a6000x8");
  const std::vector<int> four = {0, 1, 2, 3};  // edges: NVLink 3 us, PCIe 15 us, NVLink, PCIe
  const double b = 256 * core::kKiB, pcie = 24e9;
  // ring1: the PCIe hop gpu1 -> cpu0 carries three blocks (from 0, 1 and 3), and a block
  // starting at gpu1 crosses both PCIe edges: 15 + 3 + 15 us of latency.
  CollectiveBound r1 = BoundCollective(t, four, CollectiveAlgo::kRing1, b);
  EXPECT_NEAR(r1.t_bw_s, 3 * b / pcie + 15e-6, 1e-15);
  EXPECT_NEAR(r1.t_chain_s, 33e-6 + b / pcie, 1e-15);
  EXPECT_DOUBLE_EQ(r1.bound_s, r1.t_bw_s);
  EXPECT_EQ(r1.binding.rfind("pcie:", 0), 0u) << r1.binding;
  // ring2: halves each way; a PCIe direction carries three halves; the chain binds.
  CollectiveBound r2 = BoundCollective(t, four, CollectiveAlgo::kRing2, b);
  EXPECT_NEAR(r2.t_bw_s, 3 * (b / 2) / pcie + 15e-6, 1e-15);
  EXPECT_NEAR(r2.t_chain_s, 33e-6 + (b / 2) / pcie, 1e-15);
  EXPECT_NEAR(r2.t_port_s, 33e-6 + (b / 2) / pcie, 1e-15);  // gpu1's clockwise half
  EXPECT_DOUBLE_EQ(r2.bound_s, r2.t_chain_s);
  EXPECT_EQ(r2.binding.rfind("chain from ", 0), 0u) << r2.binding;
  // direct: gpu0's uplink carries its block to gpu2 and gpu3; one route per block.
  CollectiveBound d = BoundCollective(t, four, CollectiveAlgo::kDirect, b);
  EXPECT_NEAR(d.t_bw_s, 2 * b / pcie + 15e-6, 1e-15);
  EXPECT_NEAR(d.t_chain_s, 15e-6 + b / pcie, 1e-15);
  // Large blocks: the double ring's bound is half the single ring's, less a latency.
  const double big = 64 * core::kMiB;
  EXPECT_NEAR(BoundCollective(t, four, CollectiveAlgo::kRing1, big).bound_s - 15e-6,
              2 * (BoundCollective(t, four, CollectiveAlgo::kRing2, big).bound_s - 15e-6), 1e-12);
}

TEST(CollectiveBound, TwoDevicesAndDegenerateRings) {
  hw::Topology t = BoundPreset("h100x8");
  const std::vector<int> two = {0, 1};
  // Both halves of ring2 take the one route: the same load as ring1.
  const double b = 1 * core::kMiB;
  const double one = BoundCollective(t, two, CollectiveAlgo::kRing1, b).bound_s;
  EXPECT_NEAR(one, b / 450e9 + 8e-6, 1e-15);
  EXPECT_NEAR(BoundCollective(t, two, CollectiveAlgo::kRing2, b).bound_s, one, 1e-15);
  EXPECT_EQ(BoundCollective(t, std::vector<int>{3}, CollectiveAlgo::kRing1, b).bound_s, 0);
  EXPECT_EQ(BoundCollective(t, two, CollectiveAlgo::kRing1, 0).bound_s, 8e-6);
}

TEST(CollectiveBound, BothHalvesOfABlockLeaveThroughTheOneSwitchPort) {
  // h100x8: a GPU's two halves share its port to the switch, so the double ring's block needs
  // the whole block's time at the port plus three routes of latency, as the single ring's.
  hw::Topology t = BoundPreset("h100x8");
  const std::vector<int> four = {0, 1, 2, 3};
  const double b = 1 * core::kMiB;
  CollectiveBound r2 = BoundCollective(t, four, CollectiveAlgo::kRing2, b);
  EXPECT_NEAR(r2.t_chain_s, 24e-6 + (b / 2) / 450e9, 1e-15);
  EXPECT_NEAR(r2.t_port_s, 24e-6 + b / 450e9, 1e-15);
  EXPECT_DOUBLE_EQ(r2.bound_s, r2.t_port_s);
  EXPECT_EQ(r2.binding, "port nvlink:gpu0->nvswitch");
  EXPECT_NEAR(r2.bound_s, BoundCollective(t, four, CollectiveAlgo::kRing1, b).t_chain_s, 1e-15);
}

TEST(CollectiveBound, NeverAboveTheModel) {
  for (const char* name : {"a6000x8", "h100x8", "rtx4090x4"}) {
    hw::Topology t = BoundPreset(name);
    for (int n = 2; n <= t.num_devices(); ++n) {
      std::vector<int> devices(n);
      for (int d = 0; d < n; ++d) devices[d] = d;
      for (CollectiveAlgo a : AllCollectiveAlgos()) {
        auto ring = hw::BestRing(
            t, devices,
            a == CollectiveAlgo::kRing2 ? hw::RingKind::kDouble : hw::RingKind::kSingle);
        ASSERT_TRUE(ring.ok()) << ring.status().ToString();
        for (double b : {64.0 * core::kKiB, 1.0 * core::kMiB, 16.0 * core::kMiB}) {
          const double bound = BoundCollective(t, ring->order, a, b).bound_s;
          const double model =
              ModelCollective(t, ring->order, CollectiveKind::kAllGather, a, b).total_s;
          EXPECT_LE(bound, model * (1 + 1e-9))
              << name << " n=" << n << " " << CollectiveAlgoName(a) << " " << b;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::compass
