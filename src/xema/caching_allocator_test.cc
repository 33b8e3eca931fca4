// Golden cases of the caching-allocator replay, each number derived by hand from the rules in
// caching_allocator.h, plus invariants on random traces.
#include "xema/caching_allocator.h"

#include <gtest/gtest.h>

#include "core/units.h"
#include "xema/static_layout.h"
#include "xema/trace_generator.h"

namespace tessera::xema {
namespace {

// Allocates `first` blocks of `a` MiB, frees them all, then allocates `second` of `b` MiB.
AllocatorStats AllocFreeAlloc(const AllocatorPolicy& p, int first, int64_t a, int second,
                              int64_t b) {
  CachingAllocatorSim sim(p);
  std::vector<int> h;
  for (int i = 0; i < first; ++i) h.push_back(*sim.Malloc(a * core::kMiBInt64));
  for (int x : h) sim.Free(x);
  for (int i = 0; i < second; ++i) EXPECT_TRUE(sim.Malloc(b * core::kMiBInt64).ok());
  return sim.stats();
}

TEST(CachingAllocatorTest, SixteenThenThirtyTwo) {
  // 16 MiB >= 10 MiB: each request gets its own segment rounded to 2 MiB = 16 MiB; 8 of them
  // reserve 128 MiB. Freed, each is a whole 16 MiB free block; a 32 MiB request finds no free
  // block >= 32 MiB (best fit needs size >= request) and allocates a new 32 MiB segment:
  // 4 x 32 = 128 MiB more. Reserved 256 MiB, allocated peaks at 128 MiB.
  AllocatorStats s = AllocFreeAlloc({}, 8, 16, 4, 32);
  EXPECT_EQ(s.peak_reserved_bytes, 256 * core::kMiBInt64);
  EXPECT_EQ(s.peak_allocated_bytes, 128 * core::kMiBInt64);
  EXPECT_EQ(s.segments_created, 12);
  // At the peak-reserved moment (the 4th 32 MiB segment) 128 MiB are allocated: 50% of the
  // reserved memory is cached but unusable for these requests.
  EXPECT_EQ(s.allocated_at_peak_reserved_bytes, 128 * core::kMiBInt64);
  EXPECT_DOUBLE_EQ(s.Fragmentation(), 0.5);
}

TEST(CachingAllocatorTest, ThirtyTwoThenSixteen) {
  // 4 x 32 MiB: four 32 MiB segments, 128 MiB. Freed, a 16 MiB request best-fits a 32 MiB
  // block and splits it (rest 16 MiB > 1 MiB, no max_split_size), the next takes the rest:
  // 8 x 16 MiB fit in the four segments. Reserved stays 128 MiB.
  AllocatorStats s = AllocFreeAlloc({}, 4, 32, 8, 16);
  EXPECT_EQ(s.peak_reserved_bytes, 128 * core::kMiBInt64);
  EXPECT_EQ(s.segments_created, 4);
  EXPECT_DOUBLE_EQ(s.Fragmentation(), 0.0);
}

TEST(CachingAllocatorTest, ExpandableSegments) {
  // One large-pool segment growing in 20 MiB pages. 8 x 16 MiB: the free tail before each
  // request is 0, 4, 8, 12, 16, 0, 4, 8 MiB, so the segment grows by 20, 20, 20, 20, 0, 20,
  // 20, 20 MiB (the 5th request fits the 16 MiB tail exactly): 140 MiB mapped, 128
  // allocated. Freed, the blocks merge into one 140 MiB free block, which serves 4 x 32 MiB
  // by splitting. Reserved 140 MiB: the documented number, from these rules.
  AllocatorPolicy p;
  p.expandable_segments = true;
  AllocatorStats s = AllocFreeAlloc(p, 8, 16, 4, 32);
  EXPECT_EQ(s.peak_reserved_bytes, 140 * core::kMiBInt64);
  EXPECT_EQ(s.segments, 1);
  EXPECT_EQ(s.segments_created, 7);  // expansions
  // The reverse order: 4 x 32 MiB map 40, 20 (tail 8 + 20 = 28 < 32: 2 pages -> 48), ...
  // worked: tails 0 -> 2 pages (40, rest 8); 8 -> 2 pages (rest 16); 16 -> 1 page (rest 4);
  // 4 -> 2 pages (rest 12): 7 pages = 140 MiB; 8 x 16 MiB then fit in the merged 140 MiB.
  s = AllocFreeAlloc(p, 4, 32, 8, 16);
  EXPECT_EQ(s.peak_reserved_bytes, 140 * core::kMiBInt64);
}

TEST(CachingAllocatorTest, SmallPoolAndRounding) {
  CachingAllocatorSim sim({});
  // 1000 B -> 1024 B block in a new 2 MiB small segment; the rest (2 MiB - 1 KiB) is split off.
  auto a = sim.Malloc(1000);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(sim.stats().reserved_bytes, 2 * core::kMiBInt64);
  EXPECT_EQ(sim.stats().allocated_bytes, 1024);
  EXPECT_EQ(sim.stats().requested_bytes, 1000);
  // 1 MiB is still small: served from the same segment's rest.
  ASSERT_TRUE(sim.Malloc(core::kMiBInt64).ok());
  EXPECT_EQ(sim.stats().reserved_bytes, 2 * core::kMiBInt64);
  // 1 MiB + 512 B is large and < 10 MiB: a 20 MiB segment.
  auto c = sim.Malloc(core::kMiBInt64 + 1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(sim.stats().reserved_bytes, 22 * core::kMiBInt64);
  EXPECT_EQ(sim.stats().allocated_bytes, 1024 + core::kMiBInt64 + core::kMiBInt64 + 512);
  // 19 MiB: the 20 MiB segment's free rest is 20 MiB - (1 MiB + 512) < 19 MiB? no: it is
  // 18.999 MiB < 19 MiB, so a new segment rounded up to 2 MiB: 20 MiB.
  ASSERT_TRUE(sim.Malloc(19 * core::kMiBInt64).ok());
  EXPECT_EQ(sim.stats().reserved_bytes, 42 * core::kMiBInt64);
  // A large block is not split when the rest would be <= 1 MiB: 18 MiB + 512 B from the
  // first 20 MiB segment's 19 MiB - 512 B rest leaves 1 MiB - 1 KiB: the whole rest is used.
  const int64_t before = sim.stats().allocated_bytes;
  ASSERT_TRUE(sim.Malloc(18 * core::kMiBInt64 + 512).ok());
  EXPECT_EQ(sim.stats().reserved_bytes, 42 * core::kMiBInt64);
  EXPECT_EQ(sim.stats().allocated_bytes - before, 20 * core::kMiBInt64 - (core::kMiBInt64 + 512));
}

TEST(CachingAllocatorTest, MaxSplitSize) {
  // max_split_size 64 MiB: a freed 100 MiB block (>= 64 MiB) cannot serve a 16 MiB request,
  // so 16 MiB gets its own segment; a 90 MiB request may use it (100 < 90 + 20) unsplit.
  AllocatorPolicy p = *ParseAllocatorPolicy("pytorch,max_split_size_mb=64");
  CachingAllocatorSim sim(p);
  int a = *sim.Malloc(100 * core::kMiBInt64);
  sim.Free(a);
  ASSERT_TRUE(sim.Malloc(16 * core::kMiBInt64).ok());
  EXPECT_EQ(sim.stats().reserved_bytes, 116 * core::kMiBInt64);
  ASSERT_TRUE(sim.Malloc(90 * core::kMiBInt64).ok());
  EXPECT_EQ(sim.stats().reserved_bytes, 116 * core::kMiBInt64);
  EXPECT_EQ(sim.stats().allocated_bytes, 116 * core::kMiBInt64);  // whole 100 MiB block, not split
}

TEST(CachingAllocatorTest, DeviceLimitFlushesCacheThenOoms) {
  // Limit 200 MiB: 8 x 16 MiB, freed, then 4 x 32 MiB: the third 32 MiB segment would make
  // 128 + 96 = 224 > 200, so the cached 16 MiB segments are freed (reserved 64) and it fits.
  AllocatorPolicy p;
  p.device_limit_bytes = 200 * core::kMiBInt64;
  AllocatorStats s = AllocFreeAlloc(p, 8, 16, 4, 32);
  EXPECT_EQ(s.cache_flushes, 1);
  EXPECT_EQ(s.peak_reserved_bytes, 192 * core::kMiBInt64);  // 128 + 2 x 32 before the flush
  EXPECT_EQ(s.reserved_bytes, 128 * core::kMiBInt64);
  CachingAllocatorSim sim(p);
  ASSERT_TRUE(sim.Malloc(150 * core::kMiBInt64).ok());
  auto oom = sim.Malloc(60 * core::kMiBInt64);
  ASSERT_FALSE(oom.ok());
  EXPECT_NE(oom.status().message().find("out of memory: tried to allocate 60 MiB with 150 MiB "
                                        "reserved"),
            std::string::npos)
      << oom.status().message();
}

TEST(CachingAllocatorTest, ALongRunReusesBlockSlotsAndPlacesBlocksInsideTheirSegments) {
  for (bool expandable : {false, true}) {
    AllocatorPolicy p;
    p.expandable_segments = expandable;
    CachingAllocatorSim sim(p);
    int slots_after_first = 0;
    for (int round = 0; round < 200; ++round) {
      std::vector<int> h;
      for (int64_t mib : {3, 1, 7, 2, 12}) {
        auto m = sim.Malloc(mib * core::kMiBInt64 + 4096);
        ASSERT_TRUE(m.ok());
        h.push_back(*m);
      }
      // Live blocks lie inside their segment and do not overlap.
      for (size_t i = 0; i < h.size(); ++i) {
        const CachingAllocatorSim::Placement a = sim.PlacementOf(h[i]);
        const CachingAllocatorSim::SegmentInfo seg = sim.SegmentOf(a.segment);
        EXPECT_EQ(seg.expandable, expandable);
        EXPECT_GE(a.offset, 0);
        EXPECT_LE(a.offset + 4096, seg.bytes);
        for (size_t j = 0; j < i; ++j) {
          const CachingAllocatorSim::Placement b = sim.PlacementOf(h[j]);
          EXPECT_FALSE(a.segment == b.segment && a.offset == b.offset);
        }
      }
      for (size_t i = 0; i < h.size(); i += 2) sim.Free(h[i]);
      for (size_t i = 1; i < h.size(); i += 2) sim.Free(h[i]);
      if (round == 0) slots_after_first = sim.block_slots();
    }
    // Splits and merges every round, yet no more block records than the first round needed.
    EXPECT_LE(sim.block_slots(), slots_after_first + 5) << expandable;
  }
}

TEST(CachingAllocatorTest, PolicyStrings) {
  auto p = ParseAllocatorPolicy("pytorch");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->expandable_segments);
  EXPECT_EQ(p->max_split_size_bytes, kNoMaxSplit);
  p = ParseAllocatorPolicy("pytorch:expandable_segments,max_split_size_mb=128");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->expandable_segments);
  EXPECT_EQ(p->max_split_size_bytes, 128 * core::kMiBInt64);
  EXPECT_EQ(PolicyName(*p), "pytorch:expandable_segments,max_split_size_mb=128");
  p = ParseAllocatorPolicy("pytorch:expandable_segments:True,max_split_size_mb:64");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(PolicyName(*p), "pytorch:expandable_segments,max_split_size_mb=64");
  for (const char* bad : {"tcmalloc", "pytorchx", "pytorch:expandable",
                          "pytorch,max_split_size_mb=20", "pytorch,max_split_size_mb=abc",
                          "pytorch,max_split_size_mb", "pytorch:expandable_segments:Maybe"}) {
    auto r = ParseAllocatorPolicy(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("policy: got '" + std::string(bad) + "'"),
              std::string::npos);
    EXPECT_NE(r.status().message().find("pytorch[:expandable_segments][,max_split_size_mb=N]"),
              std::string::npos);
  }
}

// Invariants on random traces: allocated >= live bytes (so peak allocated >= the layout lower
// bound), reserved >= allocated, and every block is returned.
TEST(CachingAllocatorTest, RandomTraceInvariants) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    RandomTraceOptions o;
    o.tensors = 20;
    o.steps = 3;
    MemoryTrace t = RandomTrace(seed, o);
    auto x = Expand(t);
    ASSERT_TRUE(x.ok());
    for (const char* policy :
         {"pytorch", "pytorch:expandable_segments", "pytorch,max_split_size_mb=32"}) {
      ReplayReport r = ReplayTrace(*x, *ParseAllocatorPolicy(policy));
      ASSERT_FALSE(r.oom);
      EXPECT_GE(r.stats.peak_allocated_bytes, LowerBoundBytes(*x)) << policy << " " << seed;
      EXPECT_GE(r.stats.peak_reserved_bytes, r.stats.peak_allocated_bytes);
      EXPECT_EQ(r.stats.allocated_bytes, 0);
      EXPECT_EQ(r.stats.requested_bytes, 0);
      EXPECT_GE(r.stats.Fragmentation(), 0.0);
      EXPECT_LT(r.stats.Fragmentation(), 1.0);
    }
  }
}

}  // namespace
}  // namespace tessera::xema
