// compass/engine/emulated_links.h: the emulated fabric of a topology keeps its routes, and the
// runtime's chunk count on it (comm::PacedChunkCount, what LinkCollectives uses) equals the
// model's on the topology (ModelChunkCount) for every preset, ring, algorithm, block size and
// time scale, so the model follows the messages the runtime sends.
#include "compass/engine/emulated_links.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/link_chunks.h"
#include "compass/collective_model.h"
#include "core/units.h"
#include "hw/ring_order.h"

namespace tessera::compass {
namespace {

TEST(EmulatedLinks, RuntimeAndModelCutMessagesIntoTheSameChunks) {
  int compared = 0;
  for (const char* name : {"a6000x8", "h100x8", "rtx4090x4"}) {
    auto t = hw::TopologyPreset(name);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    for (int n : {2, 4, t->num_devices()}) {
      std::vector<int> devices(n);
      for (int d = 0; d < n; ++d) devices[d] = d;
      for (double scale : {1.0, 677.0, 4377.0}) {
        runtime::TimeScale ts;
        ts.scale = scale;
        auto links = EmulatedLinks(*t, devices, ts);
        ASSERT_TRUE(links.ok()) << links.status().ToString();
        for (comm::LinkAlgo a : comm::AllLinkAlgos()) {
          auto ring = hw::BestRing(
              *t, devices,
              a == comm::LinkAlgo::kRing2 ? hw::RingKind::kDouble : hw::RingKind::kSingle);
          ASSERT_TRUE(ring.ok());
          // Ranks sit on devices 0..n-1: the endpoint at position p is the device there.
          for (double kib : {16.0, 256.0, 1024.0, 4096.0}) {
            const double b = kib * core::kKiB;
            EXPECT_EQ(comm::PacedChunkCount(*links, ring->order, a, b),
                      ModelChunkCount(*t, ring->order, a, b))
                << name << " n=" << n << " s=" << scale << " " << comm::LinkAlgoName(a) << " "
                << kib << " KiB";
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 3 * 3 * 3 * 3 * 4);
}

}  // namespace
}  // namespace tessera::compass
