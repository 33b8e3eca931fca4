#include "compass/collective_model.h"

#include <gtest/gtest.h>

#include <string>

#include "core/units.h"
#include "hw/ring_order.h"

namespace tessera::compass {
namespace {

using core::Json;

hw::Topology Preset(const std::string& name) {
  auto t = hw::TopologyPreset(name);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

std::vector<int> Best(const hw::Topology& t, hw::RingKind kind) {
  std::vector<int> all(t.num_devices());
  for (int d = 0; d < t.num_devices(); ++d) all[d] = d;
  auto r = hw::BestRing(t, all, kind);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r->order;
}

double Time(const hw::Topology& t, const std::vector<int>& order, CollectiveAlgo algo,
            double bytes) {
  return ModelCollectiveLockstep(t, order, CollectiveKind::kAllGather, algo, bytes).total_s;
}
double MessageTime(const hw::Topology& t, const std::vector<int>& order, CollectiveKind kind,
                   CollectiveAlgo algo, double bytes) {
  return ModelCollective(t, order, kind, algo, bytes).total_s;
}

TEST(CollectiveModelTest, NamesParseBack) {
  for (CollectiveAlgo a : AllCollectiveAlgos()) {
    auto p = ParseCollectiveAlgo(CollectiveAlgoName(a));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, a);
  }
  EXPECT_EQ(ParseCollectiveAlgo("ring3").status().message(),
            "algo: got 'ring3', must be one of ring1, ring2, direct");
  EXPECT_STREQ(CollectiveKindName(CollectiveKind::kReduceScatter), "reducescatter");
}

TEST(CollectiveModelTest, TwoDevicesOnOneLink) {
  auto t = hw::TopologyFromJson(Json::parse(R"({"name": "pair", "device": "h100-sxm5-80gb",
          "vertices": [{"name": "a", "kind": "device"}, {"name": "b", "kind": "device"}],
          "links": [{"src": "a", "dst": "b", "kind": "nvlink", "bw_bytes_per_s": 10e9,
                     "latency_s": 5e-6, "duplex": true}]})"),
                                "pair");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const std::vector<int> order = {0, 1};
  for (CollectiveAlgo a : AllCollectiveAlgos()) {
    for (CollectiveKind k : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
      CollectiveModel m = ModelCollectiveLockstep(*t, order, k, a, 1e6);
      ASSERT_EQ(m.step_s.size(), 1u) << CollectiveAlgoName(a);
      // latency + bytes / bw; ring2 on 2 ranks: both halves on the one edge, same time.
      EXPECT_NEAR(m.total_s, 5e-6 + 1e6 / 10e9, 1e-15) << CollectiveAlgoName(a);
      // One message each way: the message form gives the same.
      EXPECT_NEAR(ModelCollective(*t, order, k, a, 1e6).total_s, 5e-6 + 1e6 / 10e9, 1e-15);
    }
  }
  EXPECT_EQ(ModelCollective(*t, std::vector<int>{1}, CollectiveKind::kAllGather,
                            CollectiveAlgo::kRing1, 1e6)
                .total_s,
            0);
}

TEST(CollectiveModelTest, A6000RingsAndDirect) {
  hw::Topology t = Preset("a6000x8");
  const std::vector<int> single = Best(t, hw::RingKind::kSingle);
  const std::vector<int> twice = Best(t, hw::RingKind::kDouble);
  const double big = 1 * core::kGiB;
  // ring1: 7 steps, each the cross-socket edge: 16 us + block / 24 GB/s.
  const double r1 = Time(t, single, CollectiveAlgo::kRing1, big);
  EXPECT_NEAR(r1, 7 * (16e-6 + big / 24e9), 1e-12);
  // ring2: half blocks; the UPI carries two half-flows per direction (41.6 / 2 each).
  const double r2 = Time(t, twice, CollectiveAlgo::kRing2, big);
  EXPECT_NEAR(r2, 7 * (16e-6 + (big / 2) / 20.8e9), 1e-12);
  EXPECT_GT(r1 / r2, 1.7);
  EXPECT_LT(r1 / r2, 2.0);
  // Inside one socket (TP 4) the double ring is 2x for big blocks.
  const std::vector<int> four = {0, 1, 2, 3};
  EXPECT_NEAR(
      Time(t, four, CollectiveAlgo::kRing1, big) / Time(t, four, CollectiveAlgo::kRing2, big), 2,
      0.01);
  // Small blocks are latency-bound: little gain.
  EXPECT_LT(
      Time(t, single, CollectiveAlgo::kRing1, 1e3) / Time(t, twice, CollectiveAlgo::kRing2, 1e3),
      1.01);
  // direct loads the shared PCIe / UPI paths: slower than ring1.
  const double d = Time(t, single, CollectiveAlgo::kDirect, big);
  EXPECT_GT(d, 1.3 * r1);
  CollectiveModel m = ModelCollectiveLockstep(t, single, CollectiveKind::kReduceScatter,
                                              CollectiveAlgo::kDirect, big);
  ASSERT_EQ(m.step_s.size(), 7u);
  // Step 4 pulls across the sockets for every rank: 4 flows per UPI direction.
  EXPECT_NEAR(m.step_s[3], 16e-6 + big / (41.6e9 / 4), 1e-12);
  EXPECT_DOUBLE_EQ(m.total_s, d);
}

TEST(CollectiveModelTest, MessageFormIsBetweenTheBandwidthBoundAndTheLockstepForm) {
  hw::Topology t = Preset("a6000x8");
  const std::vector<int> four = {0, 1, 2, 3};  // NVLink, PCIe, NVLink, PCIe edges
  const double block = 4 * core::kMiB;
  for (CollectiveKind k : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    for (CollectiveAlgo a : AllCollectiveAlgos()) {
      const double msg = MessageTime(t, four, k, a, block);
      const double lock = ModelCollectiveLockstep(t, four, k, a, block).total_s;
      // Rings never wait at a step barrier, so they finish no later than the lock-step form
      // (direct may: without a barrier a rank's next pull overlaps other ranks' current ones).
      if (a != CollectiveAlgo::kDirect) {
        EXPECT_LE(msg, lock * (1 + 1e-12)) << CollectiveAlgoName(a);
      }
      // The slowest directed edge carries n-1 messages (or halves) one after another.
      const double per_edge = a == CollectiveAlgo::kRing2 ? block / 2 : block;
      EXPECT_GE(msg, 3 * per_edge / 24e9) << CollectiveAlgoName(a);
    }
    // ring1 by hand: the PCIe edge 1 -> 2 is the bottleneck; rank 1 always has its next block
    // (over NVLink) before the previous one has left, so the edge transmits three blocks back
    // to back and the last arrives one route latency later.
    const double pcie_latency = t.route(1, 2).latency_s;
    EXPECT_NEAR(MessageTime(t, four, k, CollectiveAlgo::kRing1, block),
                3 * block / 24e9 + pcie_latency, 1e-9)
        << CollectiveKindName(k);
  }
  // On the uniform NVSwitch machine the chunks hide most of each step's latency: between
  // the bandwidth bound (7 blocks through one port) plus one latency, and the lock-step form.
  hw::Topology h = Preset("h100x8");
  const std::vector<int> order = Best(h, hw::RingKind::kSingle);
  for (CollectiveAlgo a : AllCollectiveAlgos()) {
    const double msg = MessageTime(h, order, CollectiveKind::kAllGather, a, block);
    EXPECT_GE(msg, (7 * block / 450e9 + 8e-6) * (1 - 1e-12)) << CollectiveAlgoName(a);
    EXPECT_LE(msg, Time(h, order, a, block) * (1 + 1e-12)) << CollectiveAlgoName(a);
  }
}

TEST(CollectiveModelTest, H100SwitchGivesNoDoubleRingGain) {
  hw::Topology t = Preset("h100x8");
  const std::vector<int> order = Best(t, hw::RingKind::kSingle);
  const double big = 16 * core::kMiB;
  const double r1 = Time(t, order, CollectiveAlgo::kRing1, big);
  EXPECT_NEAR(r1, 7 * (8e-6 + big / 450e9), 1e-15);
  EXPECT_NEAR(Time(t, order, CollectiveAlgo::kRing2, big), r1, 1e-15);
  EXPECT_DOUBLE_EQ(Time(t, order, CollectiveAlgo::kDirect, big), r1);
}

TEST(CollectiveModelTest, TheDoubleRingsDirectionsProgressOnTheirOwn) {
  // On a6000x8's first socket the two directions use disjoint resources, so each half of the
  // double ring runs exactly as a single ring of half blocks: neither waits for the other.
  hw::Topology t = Preset("a6000x8");
  const std::vector<int> four = {0, 1, 2, 3};
  for (double kib : {64.0, 256.0, 1024.0, 4096.0}) {
    const double b = kib * core::kKiB;
    EXPECT_EQ(ModelChunkCount(t, four, CollectiveAlgo::kRing2, b),
              ModelChunkCount(t, four, CollectiveAlgo::kRing1, b / 2));
    for (CollectiveKind k : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
      EXPECT_NEAR(MessageTime(t, four, k, CollectiveAlgo::kRing2, b),
                  MessageTime(t, four, k, CollectiveAlgo::kRing1, b / 2), 1e-12)
          << kib << " KiB";
    }
  }
}

}  // namespace
}  // namespace tessera::compass
