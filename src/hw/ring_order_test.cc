#include "hw/ring_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/rng.h"
#include "hw/test_util.h"

namespace tessera::hw {
namespace {

using core::Json;

using testing::Named;
using testing::Preset;

Topology FromJson(const Json& j) {
  auto t = TopologyFromJson(j, "test");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

Json Vertex(const std::string& name, const std::string& kind, double bw = 0) {
  Json v = {{"name", name}, {"kind", kind}};
  if (bw > 0) v["bw_bytes_per_s"] = bw;
  return v;
}

TEST(FlowTimesTest, OneFlowIsLatencyPlusBytesOverBandwidth) {
  Topology t = Preset("a6000x8");
  const Flow f[] = {{0, 1, 56.25e6}, {2, 2, 1e9}, {3, 4, 0}};
  const std::vector<double> s = ConcurrentFlowTimesS(t, f);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], 3e-6 + 1e-3);
  EXPECT_EQ(s[1], 0);  // local
  EXPECT_EQ(s[2], 0);  // nothing to send
}

// g0 -> sw -> g2 and g1 -> sw -> g2 share sw->g2 (100 GB/s); g1's private link g1->sw is
// `private_bw`.
Topology Shared(double private_bw) {
  return FromJson({{"name", "shared"},
                   {"device", "h100-sxm5-80gb"},
                   {"vertices",
                    {Vertex("g0", "device"), Vertex("g1", "device"), Vertex("g2", "device"),
                     Vertex("sw", "switch")}},
                   {"links",
                    {testing::LinkJson("g0", "sw", 100e9, 1e-6),
                     testing::LinkJson("g1", "sw", private_bw, 2e-6),
                     testing::LinkJson("sw", "g2", 100e9, 3e-6)}}});
}

TEST(FlowTimesTest, MaxMinFairProgressiveFilling) {
  // Fair share 50 each (the private link allows 60); when the first flow ends at 2 ms the
  // second speeds up to its private 60 GB/s: 100 MB at 50 GB/s, then 200 MB at 60 GB/s.
  {
    Topology t = Shared(60e9);
    const Flow f[] = {{0, 2, 100e6}, {1, 2, 300e6}};
    const std::vector<double> s = ConcurrentFlowTimesS(t, f);
    EXPECT_NEAR(s[0], 2e-3 + 4e-6, 1e-12);
    EXPECT_NEAR(s[1], 2e-3 + 200e6 / 60e9 + 5e-6, 1e-12);
  }
  // The private link (30) is below the fair share: the other flow takes the rest (70).
  {
    Topology t = Shared(30e9);
    const Flow f[] = {{0, 2, 140e6}, {1, 2, 300e6}};
    const std::vector<double> s = ConcurrentFlowTimesS(t, f);
    EXPECT_NEAR(s[0], 2e-3 + 4e-6, 1e-12);
    EXPECT_NEAR(s[1], 10e-3 + 5e-6, 1e-12);
  }
  // Flows in opposite directions of a duplex link do not share.
  {
    Topology t = Shared(60e9);
    const Flow f[] = {{0, 2, 100e6}, {2, 0, 100e6}};
    const std::vector<double> s = ConcurrentFlowTimesS(t, f);
    EXPECT_NEAR(s[0], 1e-3 + 4e-6, 1e-12);
    EXPECT_NEAR(s[1], 1e-3 + 4e-6, 1e-12);
  }
}

TEST(FlowTimesTest, CapacityVertexIsSharedByBothDirections) {
  Topology t = Preset("rtx4090x4");
  const Flow f[] = {{0, 1, 38.4e6}, {1, 0, 38.4e6}};
  const std::vector<double> s = ConcurrentFlowTimesS(t, f);
  EXPECT_NEAR(s[0], 2e-3 + 25e-6, 1e-12);  // 19.2 GB/s each through cpu0
  EXPECT_NEAR(s[1], 2e-3 + 25e-6, 1e-12);
}

TEST(RingOrderTest, AnalyzeA6000Rings) {
  Topology t = Preset("a6000x8");
  const int paired[] = {0, 1, 2, 3, 4, 5, 6, 7};
  RingAnalysis a = AnalyzeRing(t, paired);
  EXPECT_DOUBLE_EQ(a.bottleneck_bytes_per_s, 24e9);
  // Double ring: each PCIe direction carries one half-flow (24 GB/s), but each UPI direction
  // carries two (the clockwise and the counter-clockwise socket crossing): 2 * 41.6 / 2.
  EXPECT_DOUBLE_EQ(a.double_ring_bytes_per_s, 41.6e9);
  EXPECT_DOUBLE_EQ(a.step_latency_s, 16e-6);
  EXPECT_DOUBLE_EQ(a.double_ring_step_latency_s, 16e-6);
  // Pairs split: each GPU's PCIe uplink carries both directions' sends.
  const int split[] = {0, 2, 1, 3, 4, 6, 5, 7};
  a = AnalyzeRing(t, split);
  EXPECT_DOUBLE_EQ(a.bottleneck_bytes_per_s, 24e9);
  EXPECT_DOUBLE_EQ(a.double_ring_bytes_per_s, 24e9);
  // Crossing the sockets four times: each UPI direction carries two edges.
  const int zigzag[] = {0, 4, 1, 5, 2, 6, 3, 7};
  a = AnalyzeRing(t, zigzag);
  EXPECT_DOUBLE_EQ(a.bottleneck_bytes_per_s, 41.6e9 / 4);
}

TEST(RingOrderTest, BestRingsOnPresets) {
  const int all8[] = {7, 6, 5, 4, 3, 2, 1, 0};
  Topology a6 = Preset("a6000x8");
  auto single = BestRing(a6, all8, RingKind::kSingle);
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  EXPECT_EQ(single->order.front(), 0);
  // Every NVLink pair is adjacent in the ring.
  for (int pair = 0; pair < 4; ++pair) {
    const auto& o = single->order;
    const size_t p = std::find(o.begin(), o.end(), 2 * pair) - o.begin();
    const int next = o[(p + 1) % 8], prev = o[(p + 7) % 8];
    EXPECT_TRUE(next == 2 * pair + 1 || prev == 2 * pair + 1) << "pair " << pair;
  }
  EXPECT_DOUBLE_EQ(single->bottleneck_bytes_per_s, 24e9);
  auto twice = BestRing(a6, all8, RingKind::kDouble);
  ASSERT_TRUE(twice.ok());
  // 1.73x the single ring: the shared UPI (41.6 GB/s per direction) caps it below 2x.
  EXPECT_DOUBLE_EQ(twice->double_ring_bytes_per_s, 41.6e9);
  // Within one socket (TP 4) no UPI: exactly 2x.
  const int socket0[] = {0, 1, 2, 3};
  auto s4 = BestRing(a6, socket0, RingKind::kSingle);
  auto d4 = BestRing(a6, socket0, RingKind::kDouble);
  ASSERT_TRUE(s4.ok() && d4.ok());
  EXPECT_DOUBLE_EQ(s4->bottleneck_bytes_per_s, 24e9);
  EXPECT_DOUBLE_EQ(d4->double_ring_bytes_per_s, 48e9);
  EXPECT_EQ(d4->order, (std::vector<int>{0, 1, 2, 3}));

  Topology h = Preset("h100x8");
  single = BestRing(h, all8, RingKind::kSingle);
  twice = BestRing(h, all8, RingKind::kDouble);
  ASSERT_TRUE(single.ok() && twice.ok());
  EXPECT_DOUBLE_EQ(single->bottleneck_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(twice->double_ring_bytes_per_s, 450e9);  // no gain: one port per GPU
  EXPECT_EQ(single->order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));

  const int two[] = {3, 1};
  auto pair = BestRing(a6, two, RingKind::kDouble);
  ASSERT_TRUE(pair.ok());
  EXPECT_EQ(pair->order, (std::vector<int>{1, 3}));
  EXPECT_DOUBLE_EQ(pair->bottleneck_bytes_per_s, 24e9);
  EXPECT_DOUBLE_EQ(pair->double_ring_bytes_per_s, 24e9);  // n = 2 gains nothing
  const int one[] = {5};
  auto lone = BestRing(a6, one, RingKind::kSingle);
  ASSERT_TRUE(lone.ok());
  EXPECT_EQ(lone->order, (std::vector<int>{5}));
  EXPECT_EQ(lone->bottleneck_bytes_per_s, 0);
}

TEST(RingOrderTest, BestRingRejectsBadDeviceLists) {
  Topology t = Preset("rtx4090x4");
  EXPECT_EQ(BestRing(t, std::vector<int>{}, RingKind::kSingle).status().message(),
            "devices: empty list, a ring needs at least 1 device");
  EXPECT_EQ(BestRing(t, std::vector<int>{0, 4}, RingKind::kSingle).status().message(),
            "devices[1]: got 4, not a device of rtx4090x4 (devices 0..3)");
  EXPECT_EQ(BestRing(t, std::vector<int>{0, 2, 2}, RingKind::kSingle).status().message(),
            "devices[2]: got 2, already devices[1] (a ring visits a device once)");
  EXPECT_EQ(BestRing(t, std::vector<int>{0, 1, 2, 3, 0}, RingKind::kSingle).status().message(),
            "devices: got 5 devices, rtx4090x4 has 4");
}

// A random machine: n devices, up to 3 switches/hosts (some with capacity), random links from
// a few bandwidths and latencies (ties happen), every device linked to a hub.
Topology RandomTopology(core::Rng* rng, int n) {
  Json vs = Json::array();
  for (int i = 0; i < n; ++i) vs.push_back(Vertex(Named("d", i), "device"));
  const int extra = 1 + static_cast<int>(rng->Below(3));
  const double bws[] = {10e9, 20e9, 40e9};
  for (int k = 0; k < extra; ++k) {
    const bool capped = rng->Below(3) == 0;
    vs.push_back(
        Vertex(Named("s", k), k % 2 ? "host" : "switch", capped ? bws[rng->Below(3)] * 2 : 0));
  }
  Json ls = Json::array();
  std::vector<std::vector<char>> linked(n + extra, std::vector<char>(n + extra, 0));
  auto name = [&](int v) { return v < n ? Named("d", v) : Named("s", v - n); };
  auto add = [&](int a, int b, bool duplex) {
    if (a == b || linked[a][b] || (duplex && linked[b][a])) return;
    linked[a][b] = 1;
    if (duplex) linked[b][a] = 1;
    ls.push_back(testing::LinkJson(name(a), name(b), bws[rng->Below(3)], 1e-6 * (1 + rng->Below(3)),
                                   duplex));
  };
  for (int i = 0; i < n; ++i) add(i, n, true);  // the hub s0
  for (int k = 1; k < extra; ++k) add(n + k, n, true);
  const int more = static_cast<int>(rng->Below(2 * n + 1));
  for (int m = 0; m < more; ++m) {
    add(static_cast<int>(rng->Below(n + extra)), static_cast<int>(rng->Below(n + extra)),
        rng->Below(2) == 0);
  }
  return FromJson(
      {{"name", "random"}, {"device", "h100-sxm5-80gb"}, {"vertices", vs}, {"links", ls}});
}

TEST(RingOrderTest, BestRingMatchesBruteForceOverAllPermutations) {
  core::Rng rng(20260917);
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 3 + trial % 4;
    Topology t = RandomTopology(&rng, n);
    for (RingKind kind : {RingKind::kSingle, RingKind::kDouble}) {
      std::vector<int> perm(n);
      for (int i = 0; i < n; ++i) perm[i] = i;
      // Every one of the n! orders, lexicographically: the first strictly better one is kept.
      RingAnalysis best;
      bool have = false;
      auto value = [&](const RingAnalysis& a) {
        return kind == RingKind::kSingle ? a.bottleneck_bytes_per_s : a.double_ring_bytes_per_s;
      };
      auto latency = [&](const RingAnalysis& a) {
        return kind == RingKind::kSingle ? a.step_latency_s : a.double_ring_step_latency_s;
      };
      do {
        RingAnalysis a = AnalyzeRing(t, perm);
        if (!have || value(a) > value(best) ||
            (value(a) == value(best) && latency(a) < latency(best))) {
          best = a;
          have = true;
        }
      } while (std::next_permutation(perm.begin(), perm.end()));
      // The input order does not matter: pass a shuffled device list.
      std::vector<int> shuffled(n);
      for (int i = 0; i < n; ++i) shuffled[i] = i;
      for (int i = n - 1; i > 0; --i) std::swap(shuffled[i], shuffled[rng.Below(i + 1)]);
      auto got = BestRing(t, shuffled, kind);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->order, best.order) << "trial " << trial << " n " << n;
      EXPECT_EQ(value(*got), value(best)) << "trial " << trial;
      EXPECT_EQ(latency(*got), latency(best)) << "trial " << trial;
    }
  }
}

TEST(RingOrderTest, LargeRingsUseGreedyAndTwoOpt) {
  // 12 devices on a fast ring of direct links, labelled out of ring order, plus a slow switch.
  const int n = 12;
  const int ring[n] = {0, 5, 2, 9, 11, 3, 7, 1, 10, 4, 8, 6};
  Json vs = Json::array();
  for (int i = 0; i < n; ++i) vs.push_back(Vertex(Named("d", i), "device"));
  vs.push_back(Vertex("sw", "switch"));
  Json ls = Json::array();
  for (int p = 0; p < n; ++p) {
    ls.push_back(
        testing::LinkJson(Named("d", ring[p]), Named("d", ring[(p + 1) % n]), 100e9, 1e-6));
    ls.push_back(testing::LinkJson(Named("d", p), "sw", 10e9, 1e-6));
  }
  Topology t =
      FromJson({{"name", "ring12"}, {"device", "h100-sxm5-80gb"}, {"vertices", vs}, {"links", ls}});
  std::vector<int> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  auto got = BestRing(t, all, RingKind::kDouble);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_DOUBLE_EQ(got->double_ring_bytes_per_s, 200e9);
  EXPECT_EQ(got->order.front(), 0);
  std::vector<int> sorted = got->order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, all);
}

}  // namespace
}  // namespace tessera::hw
