// comm/link_chunks.h: the chunk count against its definition (the smallest k whose per-step
// time is within the slack of the best count's) on seeded random messages, links and packets,
// its invariance under the emulator's time scale, and the hops each algorithm counts.
#include "comm/link_chunks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "core/rng.h"

namespace tessera::comm {
namespace {

// The definition, spelled out: every k in [1, k_max] tried, the first within the slack.
int ReferenceCount(double bytes, double bw, double latency, int64_t packet) {
  int k_max = 1;
  while (k_max < kMaxLinkChunks && (k_max + 1) * static_cast<double>(packet) <= bytes) ++k_max;
  auto t = [&](int k) { return std::max(bytes / bw, latency + bytes / bw / k); };
  for (int k = 1; k <= k_max; ++k) {
    if (t(k) <= t(k_max) * (1 + kLinkChunkSlack)) return k;
  }
  return k_max;
}

TEST(LinkChunkCount, MatchesItsDefinitionOnRandomInputs) {
  core::Rng rng(51);
  for (int i = 0; i < 20000; ++i) {
    const double bytes = std::exp(rng.Uniform() * std::log(64e6));          // 1 B - 64 MB
    const double bw = std::exp(std::log(1e6) + rng.Uniform() * 14);         // 1 MB/s - 1.2 TB/s
    const double latency = rng.Uniform() < 0.1 ? 0 : rng.Uniform() * 1e-3;  // 0 - 1 ms
    const int64_t packet = int64_t{512} << rng.Below(8);
    EXPECT_EQ(LinkChunkCount(bytes, bw, latency, packet),
              ReferenceCount(bytes, bw, latency, packet))
        << bytes << " B, " << bw << " B/s, " << latency << " s, packet " << packet;
  }
}

TEST(LinkChunkCount, BandwidthBoundMessagesTakeFewChunksLatencyBoundOnesUpToAPacket) {
  // 4 MiB over 24 GB/s with 15 us: 175 us per message; two chunks already hide the latency.
  EXPECT_EQ(LinkChunkCount(4 << 20, 24e9, 15e-6, 8192), 2);
  // No latency: nothing to hide.
  EXPECT_EQ(LinkChunkCount(4 << 20, 24e9, 0, 8192), 1);
  // 128 KiB over the same link: 5.5 us per message against 15 us of latency; more chunks keep
  // shortening the exposed chunk until within 1% of 16 chunks of one packet each.
  const int k = LinkChunkCount(128 << 10, 24e9, 15e-6, 8192);
  EXPECT_EQ(k, 12);
  EXPECT_GT(ChunkedStepTime(128 << 10, 24e9, 15e-6, k - 1),
            1.01 * ChunkedStepTime(128 << 10, 24e9, 15e-6, 16));
  // Never a chunk below a packet, never more than kMaxLinkChunks, never 0.
  EXPECT_EQ(LinkChunkCount(3 * 8192, 1e9, 20e-6, 8192), 3);
  EXPECT_EQ(LinkChunkCount(100, 1e9, 20e-6, 8192), 1);
  EXPECT_EQ(LinkChunkCount(0, 1e9, 20e-6, 8192), 1);
  // Far more latency than transfer: every count is within 1% of the best, so one chunk.
  EXPECT_EQ(LinkChunkCount(1 << 20, 1e9, 1, 8192), 1);
}

TEST(LinkChunkCount, TheEmulatorsTimeScaleDoesNotChangeIt) {
  // Bandwidth / s and latency x s: powers of two keep the arithmetic exact.
  core::Rng rng(52);
  for (int i = 0; i < 5000; ++i) {
    const double bytes = 1 + rng.Uniform() * 8e6, bw = 1e9 + rng.Uniform() * 400e9;
    const double latency = rng.Uniform() * 20e-6;
    const double s = std::ldexp(1.0, 1 + static_cast<int>(rng.Below(12)));
    EXPECT_EQ(LinkChunkCount(bytes, bw, latency, 8192),
              LinkChunkCount(bytes, bw / s, latency * s, 8192));
  }
}

TEST(CollectiveChunkCount, CountsEveryHopOfTheAlgorithmAndItsMessage) {
  const int n = 5;
  for (LinkAlgo algo : AllLinkAlgos()) {
    std::set<std::pair<int, int>> hops;
    auto hop = [&](int from, int to) {
      hops.insert({from, to});
      return std::pair<double, double>(10e9, 5e-6);
    };
    const int k = CollectiveChunkCount(algo, n, 1 << 20, hop, 8192);
    const size_t want = algo == LinkAlgo::kRing1   ? n
                        : algo == LinkAlgo::kRing2 ? 2 * n
                                                   : n * (n - 1);
    EXPECT_EQ(hops.size(), want) << LinkAlgoName(algo);
    for (auto [from, to] : hops) {
      EXPECT_NE(from, to);
      if (algo == LinkAlgo::kRing1) {
        EXPECT_EQ(to, (from + 1) % n);
      }
    }
    EXPECT_EQ(k, LinkChunkCount(LinkMessageBytes(algo, 1 << 20), 10e9, 5e-6, 8192));
  }
  // The slowest hop's bandwidth and the largest latency count: one slow hop in a fast ring.
  auto mixed = [](int from, int) {
    return from == 2 ? std::pair<double, double>(1e9, 40e-6)
                     : std::pair<double, double>(100e9, 1e-6);
  };
  EXPECT_EQ(CollectiveChunkCount(LinkAlgo::kRing1, 4, 1 << 20, mixed, 8192),
            LinkChunkCount(1 << 20, 1e9, 40e-6, 8192));
  EXPECT_EQ(CollectiveChunkCount(LinkAlgo::kRing1, 1, 1 << 20, mixed, 8192), 1);
}

}  // namespace
}  // namespace tessera::comm
