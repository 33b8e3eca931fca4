#include "xema/pipeline/trace_recorder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include "core/check.h"
#include "xema/caching_allocator.h"
#include "xema/pipeline/caching_device_allocator.h"
#include "xema/pipeline/layout_allocator.h"
#include "xema/pipeline/trace_player.h"
#include "xema/static_layout.h"
#include "xema/trace_generator.h"

namespace tessera::xema {
namespace {

using Life = std::tuple<int, int, int64_t, int>;  // alloc op, free op, bytes, kind

std::vector<Life> Lives(const ExpandedTrace& x) {
  std::vector<Life> v;
  for (const FlatTensor& f : x.tensors) {
    v.emplace_back(f.alloc_op, f.free_op, f.bytes, static_cast<int>(f.kind));
  }
  std::sort(v.begin(), v.end());
  return v;
}

RandomTraceOptions SmallOptions(uint64_t seed) {
  RandomTraceOptions o;
  o.steps = 1 + static_cast<int>(seed % 4);
  o.tensors = 4 + static_cast<int>(seed % 13);
  o.weights = static_cast<int>(seed % 3);
  o.max_bytes = int64_t{1} << 20;
  return o;
}

// Records `trace` played through a heap allocator.
MemoryTrace Rerecord(const MemoryTrace& trace, const ExpandedTrace& x, int64_t* peak) {
  runtime::HeapDeviceAllocator heap;
  TraceRecorder recorder(heap);
  EXPECT_TRUE(PlayTrace(trace, x, heap).ok());
  auto recorded = recorder.Finish(trace.key);
  EXPECT_TRUE(recorded.ok()) << recorded.status().ToString();
  *peak = heap.peak_bytes();
  return *recorded;
}

// A random trace, and the same trace played through the heap allocator and recorded.
struct Recorded {
  MemoryTrace original, trace;
  ExpandedTrace original_x, x;
  int64_t peak = 0;
};

Recorded RecordRandom(uint64_t seed, const RandomTraceOptions& options) {
  Recorded r;
  r.original = RandomTrace(seed, options);
  auto x0 = Expand(r.original);
  CHECK(x0.ok()) << x0.status().ToString();
  r.original_x = *x0;
  r.trace = Rerecord(r.original, r.original_x, &r.peak);
  auto x = Expand(r.trace);
  CHECK(x.ok()) << x.status().ToString();
  r.x = *x;
  return r;
}

TEST(TraceRecorderTest, RecordingARandomTraceGivesItBack) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const Recorded r = RecordRandom(seed, SmallOptions(seed));
    EXPECT_EQ(r.trace.provenance, "recorded");
    EXPECT_EQ(r.trace.key.steps, r.original.key.steps);
    EXPECT_EQ(r.trace.body.size(), r.original.body.size());
    EXPECT_EQ(Lives(r.original_x), Lives(r.x)) << "seed " << seed;
    // The allocator's measured peak is the trace's lower bound, to the byte.
    EXPECT_EQ(r.peak, LowerBoundBytes(r.original_x)) << "seed " << seed;
    EXPECT_EQ(LowerBoundBytes(r.x), LowerBoundBytes(r.original_x));
  }
}

TEST(TraceRecorderTest, EveryLayoutReplaysInItsArenaWithoutOverwritingLiveData) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const Recorded r = RecordRandom(seed, SmallOptions(seed));
    for (const char* algo : {"tflite", "tflm", "xla"}) {
      auto layout = PlanLayout(r.x, algo);
      ASSERT_TRUE(layout.ok());
      auto arena = LayoutDeviceAllocator::Create(r.x, *layout);
      ASSERT_TRUE(arena.ok());
      const core::Status played = PlayTrace(r.trace, r.x, **arena);
      EXPECT_TRUE(played.ok()) << algo << " seed " << seed << ": " << played.ToString();
      EXPECT_TRUE((*arena)->status().ok()) << (*arena)->status().ToString();
      EXPECT_EQ((*arena)->peak_bytes(), r.peak);
    }
  }
}

TEST(TraceRecorderTest, AnOverlappingLayoutIsCaughtInRealMemory) {
  const Recorded r = RecordRandom(7, SmallOptions(7));
  Layout bad;
  bad.algorithm = "everything-at-0";
  bad.offsets.assign(r.x.tensors.size(), 0);
  for (const FlatTensor& f : r.x.tensors) bad.arena_bytes = std::max(bad.arena_bytes, f.bytes);
  auto arena = LayoutDeviceAllocator::Create(r.x, bad);
  ASSERT_TRUE(arena.ok());
  const core::Status played = PlayTrace(r.trace, r.x, **arena);
  EXPECT_EQ(played.code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(played.message().find("was overwritten while live"), std::string::npos)
      << played.message();
}

TEST(TraceRecorderTest, ADivergingRunIsRefusedByTheLayoutAllocator) {
  const MemoryTrace a = RandomTrace(3, SmallOptions(3));
  const MemoryTrace b = RandomTrace(4, SmallOptions(4));
  auto xa = Expand(a);
  auto xb = Expand(b);
  ASSERT_TRUE(xa.ok() && xb.ok());
  auto layout = PlanLayout(*xa, "tflite");
  ASSERT_TRUE(layout.ok());
  auto arena = LayoutDeviceAllocator::Create(*xa, *layout);
  ASSERT_TRUE(arena.ok());
  const core::Status played = PlayTrace(b, *xb, **arena);
  EXPECT_EQ(played.code(), core::StatusCode::kFailedPrecondition) << played.ToString();
  EXPECT_NE(played.message().find("run diverged from the trace at allocation"), std::string::npos)
      << played.message();
  EXPECT_EQ((*arena)->live_bytes(), 0);
}

TEST(TraceRecorderTest, CachingAllocatorRunMatchesTheReplayOfItsTrace) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    RandomTraceOptions o = SmallOptions(seed);
    o.max_bytes = int64_t{48} << 20;
    const Recorded r = RecordRandom(seed, o);
    for (const char* policy_text : {"pytorch", "pytorch:expandable_segments"}) {
      auto policy = ParseAllocatorPolicy(policy_text);
      ASSERT_TRUE(policy.ok());
      CachingDeviceAllocator caching(*policy);
      ASSERT_TRUE(PlayTrace(r.trace, r.x, caching).ok());
      const ReplayReport replay = ReplayTrace(r.x, *policy);
      EXPECT_EQ(caching.stats().peak_reserved_bytes, replay.stats.peak_reserved_bytes)
          << policy_text << " seed " << seed;
      EXPECT_EQ(caching.stats().peak_allocated_bytes, replay.stats.peak_allocated_bytes);
      EXPECT_EQ(caching.peak_bytes(), r.peak);
    }
  }
}

TEST(TraceRecorderTest, CachingAllocatorRefusesBeyondItsLimit) {
  AllocatorPolicy policy;
  policy.device_limit_bytes = int64_t{24} << 20;
  CachingDeviceAllocator caching(policy);
  auto a = caching.Allocate(int64_t{15} << 20, "a", TensorKind::kActivation);
  ASSERT_TRUE(a.ok());
  // 10 MiB takes a new 20 MiB segment: 16 + 20 MiB reserved > 24 MiB.
  auto b = caching.Allocate(int64_t{10} << 20, "b", TensorKind::kActivation);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(b.status().message().find("tensor b needs"), std::string::npos);
  EXPECT_EQ(caching.live_bytes(), int64_t{15} << 20);
}

TEST(TraceRecorderTest, CachingAllocatorBacksItsSegmentsAndReusesCachedBlocks) {
  for (const char* policy_text : {"pytorch", "pytorch:expandable_segments"}) {
    auto policy = ParseAllocatorPolicy(policy_text);
    ASSERT_TRUE(policy.ok());
    policy->device_limit_bytes = int64_t{64} << 20;
    CachingDeviceAllocator caching(*policy);
    void* first = nullptr;
    for (int i = 0; i < 3; ++i) {  // the freed block is handed out again: no new memory
      auto t = caching.Allocate(int64_t{16} << 20, "t", TensorKind::kActivation);
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      std::memset(t->data(), 0x5a, static_cast<size_t>(t->bytes()));  // the memory is real
      if (i == 0) first = t->data();
      EXPECT_EQ(t->data(), first) << policy_text;
    }
    EXPECT_EQ(caching.stats().segments_created, 1) << policy_text;
    // Two live tensors get disjoint bytes; a flush under the limit keeps live data intact.
    auto a = caching.Allocate(int64_t{20} << 20, "a", TensorKind::kActivation);
    auto b = caching.Allocate(int64_t{30} << 20, "b", TensorKind::kActivation);
    ASSERT_TRUE(a.ok() && b.ok());
    std::memset(a->data(), 1, static_cast<size_t>(a->bytes()));
    std::memset(b->data(), 2, static_cast<size_t>(b->bytes()));
    b->Reset();
    auto c = caching.Allocate(int64_t{40} << 20, "c", TensorKind::kActivation);  // flushes
    ASSERT_TRUE(c.ok()) << policy_text << ": " << c.status().ToString();
    std::memset(c->data(), 3, static_cast<size_t>(c->bytes()));
    const auto* bytes = static_cast<const unsigned char*>(a->data());
    EXPECT_EQ(bytes[0], 1);
    EXPECT_EQ(bytes[a->bytes() - 1], 1) << policy_text;
    EXPECT_LE(caching.stats().reserved_bytes, policy->device_limit_bytes);
  }
}

// A hand-made run: weights, text embedding kept to the last step, noise consumed by step 0,
// the latent carried from step to step, a workspace, a decode.
void RunMini(runtime::DeviceAllocator& a, int steps, bool diverge_step1) {
  auto w = a.Allocate(4096, "w", TensorKind::kWeight);
  ASSERT_TRUE(w.ok());
  a.BeginOp({"text", PhaseName(Phase::kText), Section::kPrologue, -1});
  auto text = a.Allocate(2048, "text", TensorKind::kActivation);
  a.EndOp();
  a.BeginOp({"noise", PhaseName(Phase::kDenoise), Section::kPrologue, -1});
  auto latent = a.Allocate(1024, "latent", TensorKind::kActivation);
  a.EndOp();
  for (int i = 0; i < steps; ++i) {
    a.BeginOp({"dit", PhaseName(Phase::kDenoise), Section::kBody, i});
    auto ws = a.Allocate(diverge_step1 && i == 1 ? 9999 : 8192, "ws", TensorKind::kWorkspace);
    auto next = a.Allocate(1024, "latent", TensorKind::kActivation);
    latent->Reset();
    *latent = std::move(*next);
    ws->Reset();
    a.EndOp();
    a.BeginOp({"sched", PhaseName(Phase::kDenoise), Section::kBody, i});
    if (i == steps - 1) text->Reset();
    a.EndOp();
  }
  a.BeginOp({"vae", PhaseName(Phase::kVae), Section::kEpilogue, -1});
  auto image = a.Allocate(65536, "image", TensorKind::kActivation);
  latent->Reset();
  image->Reset();
  a.EndOp();
  w->Reset();
}

TEST(TraceRecorderTest, FoldsAHandMadeRun) {
  runtime::HeapDeviceAllocator heap;
  TraceRecorder recorder(heap);
  RunMini(heap, 3, false);
  TraceKey key;
  key.model = "mini";
  key.dtype = "f32";
  auto t = recorder.Finish(key);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->key.steps, 3);
  EXPECT_EQ(t->prologue.size(), 2u);
  EXPECT_EQ(t->body.size(), 2u);
  EXPECT_EQ(t->epilogue.size(), 1u);
  ASSERT_EQ(t->tensors.size(), 6u);  // w, text, latent(prologue), ws, latent(body), image
  EXPECT_EQ(t->tensors[0].kind, TensorKind::kWeight);
  EXPECT_EQ(t->tensors[1].free_op, 3);  // text: body op "sched" of the last step
  EXPECT_EQ(t->tensors[1].free_step, 2);
  EXPECT_EQ(t->tensors[2].free_step, 0);  // the noise latent: step 0
  EXPECT_TRUE(t->tensors[4].free_next_step);
  EXPECT_EQ(t->tensors[4].last_free_op, 4);
  auto x = Expand(*t);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(LowerBoundBytes(*x), heap.peak_bytes());
}

TEST(TraceRecorderTest, RefusesARunWhoseStepsDiffer) {
  runtime::HeapDeviceAllocator heap;
  TraceRecorder recorder(heap);
  RunMini(heap, 3, true);
  auto t = recorder.Finish({});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(t.status().message().find("allocation 0 of step 1 ('ws', 10240 bytes"),
            std::string::npos)
      << t.status().message();
}

TEST(TraceRecorderTest, RefusesATensorLeftLive) {
  runtime::HeapDeviceAllocator heap;
  TraceRecorder recorder(heap);
  heap.BeginOp({"op", PhaseName(Phase::kText), Section::kPrologue, -1});
  auto leak = heap.Allocate(100, "leak", TensorKind::kActivation);
  heap.EndOp();
  heap.BeginOp({"step", PhaseName(Phase::kDenoise), Section::kBody, 0});
  heap.EndOp();
  auto t = recorder.Finish({});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("'leak' allocated at op 0 'op' was not freed"),
            std::string::npos)
      << t.status().message();
}

}  // namespace
}  // namespace tessera::xema
