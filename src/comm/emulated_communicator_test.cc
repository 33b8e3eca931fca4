#include "comm/emulated_communicator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "comm/conformance.h"
#include "comm/copy_engine.h"
#include "comm/futex.h"
#include "comm/in_process_communicator.h"
#include "comm/link_fabric.h"
#include "core/rng.h"

namespace tessera::comm {
namespace {

// Fast links: the conformance checks test semantics, not timing.
PacedLinks FastLinks(int n) { return FullMeshLinks(n, 50e9, 0); }

std::vector<Status> OnEmulatedRanks(
    int n, LinkAlgo algo, PacedLinks links, const std::function<Status(Communicator&)>& fn,
    std::function<std::vector<int>(const std::vector<int>&)> ring_order = nullptr) {
  std::vector<Status> results(n);
  RunInProcessRanks(n, [&](Communicator& base) {
    EmulatedOptions o;
    o.algo = algo;
    o.window_bytes = 4 << 20;
    o.ring_order = ring_order;
    auto comm = EmulatedCommunicator::Create(base, links, o);
    if (!comm.ok()) {
      results[base.rank()] = comm.status();
      return;
    }
    results[base.rank()] = fn(**comm);
  });
  return results;
}

std::vector<std::string> CheckNames() {
  std::vector<std::string> names;
  for (const auto& c : testing::ConformanceChecks()) names.push_back(c.name);
  return names;
}

// ---- The conformance suite on the emulated backend, every algorithm, 1..4 ranks ----------

class EmulatedConformance
    : public ::testing::TestWithParam<std::tuple<int, std::string, LinkAlgo>> {};

TEST_P(EmulatedConformance, PassesOnEmulatedLinks) {
  const auto& [n, name, algo] = GetParam();
  testing::CheckFn fn;
  for (const auto& c : testing::ConformanceChecks()) {
    if (c.name == name) fn = c.fn;
  }
  ASSERT_TRUE(fn != nullptr);
  // A reversed ring order, so positions differ from ranks.
  auto reversed = [](const std::vector<int>& endpoints) {
    std::vector<int> order(endpoints.size());
    std::iota(order.rbegin(), order.rend(), 0);
    return order;
  };
  std::vector<Status> results = OnEmulatedRanks(
      n, algo, FastLinks(n),
      [&](Communicator& comm) {
        comm.set_op_timeout_s(60.0);
        return fn(comm, 4321 + n);
      },
      reversed);
  for (int r = 0; r < n; ++r) EXPECT_TRUE(results[r].ok()) << results[r].ToString();
}

INSTANTIATE_TEST_SUITE_P(
    AllChecks, EmulatedConformance,
    ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::ValuesIn(CheckNames()),
                       ::testing::Values(LinkAlgo::kRing1, LinkAlgo::kRing2, LinkAlgo::kDirect)),
    [](const auto& info) {
      return std::get<1>(info.param) + "_" + std::to_string(std::get<0>(info.param)) + "ranks_" +
             LinkAlgoName(std::get<2>(info.param));
    });

// ---- Every algorithm against a plain reference on seeded inputs, random ring orders,
// slow links with many small packets (so packets of concurrent messages interleave) -------

TEST(LinkCollectives, EqualThePlainReferenceOnRandomRingsAndSizes) {
  for (int n : {2, 3, 5}) {
    for (LinkAlgo algo : {LinkAlgo::kRing1, LinkAlgo::kRing2, LinkAlgo::kDirect}) {
      core::Rng rng(100 + n);
      std::vector<int> order(n);
      std::iota(order.begin(), order.end(), 0);
      for (int i = n - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
      PacedLinks links = FullMeshLinks(n, 400e6, 20'000);
      links.packet_bytes = 512;
      const int64_t c = 1 + static_cast<int64_t>(rng.Below(3000));
      std::vector<Status> results = OnEmulatedRanks(
          n, algo, links,
          [&](Communicator& comm) -> Status {
            const int me = comm.rank();
            auto value = [&](int rank, int64_t i) {
              return static_cast<float>((rank * 7919 + i * 104729) % 1000) / 64.0f - 7.0f;
            };
            std::vector<float> send(c), all(n * c);
            for (int64_t i = 0; i < c; ++i) send[i] = value(me, i);
            RETURN_IF_ERROR(comm.AllGather(std::span<const float>(send), std::span<float>(all)));
            for (int r = 0; r < n; ++r) {
              for (int64_t i = 0; i < c; ++i) {
                if (all[r * c + i] != value(r, i)) {
                  return core::Internal("AllGather block " + std::to_string(r) + " element " +
                                        std::to_string(i));
                }
              }
            }
            // ReduceScatter: every rank contributes n blocks; values are exact in fp32 sums.
            std::vector<float> contrib(n * c), mine(c);
            for (int64_t i = 0; i < n * c; ++i) contrib[i] = value(me, i);
            RETURN_IF_ERROR(
                comm.ReduceScatter(std::span<const float>(contrib), std::span<float>(mine)));
            for (int64_t i = 0; i < c; ++i) {
              double want = 0;
              for (int r = 0; r < n; ++r) want += value(r, me * c + i);
              if (mine[i] != static_cast<float>(want)) {
                return core::Internal("ReduceScatter element " + std::to_string(i) + ": got " +
                                      std::to_string(mine[i]) + ", want " + std::to_string(want));
              }
            }
            return Status::Ok();
          },
          [&](const std::vector<int>&) { return order; });
      for (int r = 0; r < n; ++r) {
        EXPECT_TRUE(results[r].ok()) << "n=" << n << " " << LinkAlgoName(algo) << " rank " << r
                                     << ": " << results[r].ToString();
      }
    }
  }
}

TEST(LinkCollectives, AMessageLargerThanTheWindowIsRefusedOnEveryRank) {
  std::vector<Status> results =
      OnEmulatedRanks(2, LinkAlgo::kRing1, FastLinks(2), [](Communicator& comm) {
        std::vector<float> send(1 << 20), recv(2 << 20);  // 8 MiB gathered, window 4 MiB
        return comm.AllGather(std::span<const float>(send), std::span<float>(recv));
      });
  for (const Status& s : results) {
    EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("window"), std::string::npos) << s.message();
  }
}

TEST(LinkCollectives, AlgorithmNamesRoundTrip) {
  for (LinkAlgo a : {LinkAlgo::kRing1, LinkAlgo::kRing2, LinkAlgo::kDirect}) {
    EXPECT_EQ(*ParseLinkAlgo(LinkAlgoName(a)), a);
  }
  EXPECT_EQ(ParseLinkAlgo("ring3").status().message(),
            "algo: got 'ring3', must be one of ring1, ring2, direct");
}

// ---- The copy engine and the fabric ------------------------------------------------------

// Runs fn on n in-process ranks, each with a fabric over `links`, `window_bytes` of symmetric
// memory and its own copy engine, between two barriers: every engine exists before any rank
// sends, and outlives every rank's fn.
void WithCopyEngines(int n, const PacedLinks& links, int64_t window_bytes,
                     const std::function<void(Communicator&, SymmetricMemory&, CopyEngine&)>& fn) {
  RunInProcessRanks(n, [&](Communicator& base) {
    auto fabric = LinkFabric::Create(base, links);
    ASSERT_TRUE(fabric.ok()) << fabric.status().ToString();
    auto mem = SymmetricMemory::Create(base, window_bytes);
    ASSERT_TRUE(mem.ok()) << mem.status().ToString();
    CopyEngine engine(fabric->get(), base.rank());
    ASSERT_TRUE(base.Barrier().ok());
    fn(base, **mem, engine);
    ASSERT_TRUE(base.Barrier().ok());
  });
}

// A put of `bytes` (on the wire as well) from `src` to endpoint 1's segment, raising `signal`.
CopyEngine::Put PutToEndpoint1(SymmetricMemory& mem, const std::byte* src, int64_t bytes,
                               std::atomic<uint32_t>* signal) {
  CopyEngine::Put put;
  put.dst_endpoint = 1;
  put.dst = mem.segment(1);
  put.src = src;
  put.bytes = put.wire_bytes = bytes;
  put.signal = signal;
  return put;
}

TEST(CopyEngine, DeliversEveryByteAndRaisesTheSignalOncePerMessage) {
  PacedLinks links = FullMeshLinks(2, 200e6, 5'000);
  links.packet_bytes = 1024;
  WithCopyEngines(
      2, links, 1 << 20, [&](Communicator& base, SymmetricMemory& mem, CopyEngine& engine) {
        auto* signal = reinterpret_cast<std::atomic<uint32_t>*>(mem.segment(base.rank()));
        const int peer = 1 - base.rank();
        // Three messages of odd sizes (wire bytes half the real bytes) and one empty one.
        std::vector<std::byte> src(100'000);
        for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte((i * 31 + base.rank()) & 0xFF);
        const int64_t sizes[] = {1, 4097, 60'000, 0};
        int64_t offset = 64;
        for (int64_t b : sizes) {
          CopyEngine::Put put;
          put.dst_endpoint = peer;
          put.dst = mem.segment(peer) + offset;
          put.src = src.data();
          put.bytes = b;
          put.wire_bytes = b / 2;
          put.signal = reinterpret_cast<std::atomic<uint32_t>*>(mem.segment(peer));
          engine.Submit(put);
          offset += b;
        }
        EXPECT_TRUE(engine.WaitAllDone(NowNs() + 20'000'000'000));
        EXPECT_TRUE(WaitAtLeast(signal, 4, NowNs() + 20'000'000'000));
        ASSERT_TRUE(base.Barrier().ok());
        offset = 64;
        const std::byte* mine = mem.segment(base.rank());
        for (int64_t b : sizes) {
          for (int64_t i = 0; i < b; ++i) {
            ASSERT_EQ(mine[offset + i], std::byte((i * 31 + peer) & 0xFF)) << "byte " << i;
          }
          offset += b;
        }
        const CopyEngine::Stats st = engine.stats();
        EXPECT_EQ(st.messages, 4);
        EXPECT_EQ(st.wire_bytes, 0 + 2048 + 30'000);
      });
}

// That a later flow gets its share of a resource behind a faster private link (and finishes
// first), and that a message whose data were ready earlier is delivered at once, are wall-clock
// figures that a loaded machine can upset: bench_link_timing measures both. The tests below check
// what the code fixes exactly (stamps, counts, bytes).

TEST(CopyEngine, AMessageWhoseDataWereReadyEarlierStartsThenAndStampsItsArrival) {
  // One 20,000-byte packet on a 1 MB/s link with 1 ms latency: 20 ms on the wire. Submitted
  // 30 ms after its data were ready (a sender that woke up late), it still starts when the
  // data were ready: its arrival stamp is ready + 20 ms + 1 ms exactly, and it is delivered at
  // once (started at submission, it would take 21 ms).
  PacedLinks links = FullMeshLinks(2, 1e6, 1'000'000);
  links.packet_bytes = 20'000;
  WithCopyEngines(2, links, 1 << 16,
                  [&](Communicator& base, SymmetricMemory& mem, CopyEngine& engine) {
                    if (base.rank() == 0) {
                      std::vector<std::byte> src(20'000, std::byte{7});
                      std::atomic<int64_t> stamp{0};
                      std::atomic<uint32_t> signal{0};
                      CopyEngine::Put put = PutToEndpoint1(mem, src.data(), 20'000, &signal);
                      put.arrival_stamp = &stamp;
                      const int64_t submitted = NowNs();
                      put.ready_ns = submitted - 30'000'000;
                      engine.Submit(put);
                      EXPECT_TRUE(WaitAtLeast(&signal, 1, NowNs() + 20'000'000'000));
                      const int64_t done = NowNs();
                      EXPECT_EQ(stamp.load(), put.ready_ns + 21'000'000);
                      EXPECT_GE(done, stamp.load()) << "delivered before its arrival time";
                      EXPECT_EQ(mem.segment(1)[19'999], std::byte{7});
                    }
                  });
}

TEST(CopyEngine, WakesOncePerPacketNotAlsoForEachPacketsArrival) {
  // 20 packets of 10,000 bytes on a 10 MB/s link with 3.5 ms latency: a packet's turn to
  // reserve comes every 1 ms (k ms) and its arrival 3.5 ms after its last byte (k + 4.5 ms),
  // never at a turn. Only the last packet's arrival needs its own wake-up (it raises the
  // signal); the others are copied on the next turn's wake-up. So about 21 wake-ups, not the
  // 40 that waking for every arrival takes. Every byte still lands.
  PacedLinks links = FullMeshLinks(2, 10e6, 3'500'000);
  links.packet_bytes = 10'000;
  WithCopyEngines(
      2, links, 1 << 18, [&](Communicator& base, SymmetricMemory& mem, CopyEngine& engine) {
        if (base.rank() == 0) {
          std::vector<std::byte> src(200'000);
          for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i * 7 & 0xFF);
          std::atomic<uint32_t> signal{0};
          const CopyEngine::Put put = PutToEndpoint1(mem, src.data(), 200'000, &signal);
          const int64_t before = engine.stats().wakeups;
          engine.Submit(put);
          EXPECT_TRUE(WaitAtLeast(&signal, 1, NowNs() + 20'000'000'000));
          EXPECT_TRUE(engine.WaitAllDone(NowNs() + 20'000'000'000));
          const CopyEngine::Stats st = engine.stats();
          EXPECT_EQ(st.packets, 20);
          EXPECT_LE(st.wakeups - before, 26) << "woke for the arrivals as well as the turns";
          EXPECT_EQ(std::memcmp(mem.segment(1), src.data(), src.size()), 0);
        }
      });
}

TEST(LinkFabric, ReservationsFollowTheFormulaAndQueueOnSharedResources) {
  // Endpoint 0 -> 1 crosses resources {a (1 GB/s), s (0.5 GB/s)}; 0 -> 2 crosses {s}.
  PacedLinks links;
  links.num_endpoints = 3;
  links.resources = {{"a", 1e9}, {"s", 0.5e9}, {"x", 1e9}};
  links.routes.resize(9, PacedRoute{{2}, 0});
  links.routes[0 * 3 + 1] = {{0, 1}, 1000};
  links.routes[0 * 3 + 2] = {{1}, 0};
  RunInProcessRanks(1, [&](Communicator& base) {
    // The fabric is built on a 1-rank communicator but describes 3 endpoints: refused.
    EXPECT_EQ(LinkFabric::Create(base, links).status().code(), core::StatusCode::kInvalidArgument);
  });
  RunInProcessRanks(3, [&](Communicator& base) {
    auto fabric = LinkFabric::Create(base, links);
    ASSERT_TRUE(fabric.ok()) << fabric.status().ToString();
    if (base.rank() == 0) {
      // 1000 wire bytes: 1000 ns on a, 2000 ns on s; arrival = start + 2000 + latency.
      auto r1 = (*fabric)->Reserve(0, 1, 1000, 10'000);
      EXPECT_EQ(r1.start_ns, 10'000);
      EXPECT_EQ(r1.arrival_ns, 10'000 + 2000 + 1000);
      // The next packet on the shared resource s waits for it to be free at 12'000.
      auto r2 = (*fabric)->Reserve(0, 2, 500, 10'000);
      EXPECT_EQ(r1.last_start_ns, 10'000);  // cut through: s starts with a
      EXPECT_EQ(r2.start_ns, 12'000);
      EXPECT_EQ(r2.last_start_ns, 12'000);
      EXPECT_EQ(r2.arrival_ns, 12'000 + 1000);
      // 0 -> 1 again: a is free at 11'000, s (its last resource) only at 13'000.
      auto r3 = (*fabric)->Reserve(0, 1, 1000, 10'000);
      EXPECT_EQ(r3.start_ns, 11'000);
      EXPECT_EQ(r3.last_start_ns, 13'000);
      EXPECT_EQ(r3.arrival_ns, 13'000 + 2000 + 1000);
    }
    ASSERT_TRUE(base.Barrier().ok());
  });
}

TEST(PacedLinks, ValidateNamesTheBadField) {
  PacedLinks links = FullMeshLinks(2, 1e9, 0);
  links.resources[1].bytes_per_s = 0;
  EXPECT_NE(Validate(links).message().find("resource '1->0' has bandwidth 0"), std::string::npos)
      << Validate(links).message();
  links = FullMeshLinks(2, 1e9, 0);
  links.routes[1].resources = {7};
  EXPECT_NE(Validate(links).message().find("route 0->1 names resource 7"), std::string::npos)
      << Validate(links).message();
  links = FullMeshLinks(2, 1e9, -5);
  EXPECT_NE(Validate(links).message().find("latency -5 ns"), std::string::npos);
}

}  // namespace
}  // namespace tessera::comm
