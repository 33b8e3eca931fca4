#include "xema/serve/serve_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "runtime/device_allocator.h"
#include "xema/pipeline/pipeline_test_util.h"
#include "xema/pipeline/template_check.h"
#include "xema/serve/memory_policy.h"
#include "xema/static_layout.h"

namespace tessera::xema {
namespace {

using testing::MaxAbsDiff;

// A 128x128 image whose unmitigated VAE needs more than MinimumPeakBytes + 1 bytes.
DiffusionRequest Big() {
  DiffusionRequest r;
  r.width = r.height = 128;
  r.steps = 1;
  r.seed = 3;
  return r;
}

std::vector<float> DirectRun(const DiffusionRequest& r) {
  runtime::HeapDeviceAllocator heap;
  auto p = DiffusionPipeline::Load(*TinyModel(r.model), heap);
  EXPECT_TRUE(p.ok());
  std::vector<float> out(static_cast<size_t>(OutputFloats(r)));
  EXPECT_TRUE((*p)->Run(r, out).ok());
  return out;
}

TEST(ServeDeviceTest, XemaFitsWhereNoneRunsOutWithTheSameImage) {
  const DiffusionRequest r = Big();
  const int64_t budget = MinimumPeakBytes(*TinyModel("tiny-t2i"), r) + 1;
  TemplateCache none_cache;
  ServeDevice none(0, MemoryPolicy::kNone, budget, &none_cache);
  auto refused = none.Execute(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), core::StatusCode::kInfeasible);

  TemplateCache cache;
  ServeDevice xema(0, MemoryPolicy::kXema, budget, &cache);
  const std::vector<float> reference = DirectRun(r);
  for (int i = 0; i < 2; ++i) {  // the first records the template, the second hits its arena
    auto run = xema.Execute(r);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_EQ(run->template_hit, i == 1);
    EXPECT_LE(run->peak_bytes, budget);
    EXPECT_FALSE(run->mitigations.empty());
    EXPECT_LE(MaxAbsDiff(run->output, reference), 1e-6);
  }
  EXPECT_LE(xema.Snapshot().peak_reserved_bytes, budget);
  ASSERT_NE(cache.FindMitigated(TemplateKeyString(r)), nullptr);
}

TEST(ServeDeviceTest, TilingRunsEveryRequestTiled) {
  const DiffusionRequest r = Big();
  TemplateCache cache;
  ServeDevice tiling(0, MemoryPolicy::kTiling, int64_t{1} << 30, &cache);
  auto run = tiling.Execute(r);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->mitigations, std::vector<std::string>{"vae_tiles=4"});
  EXPECT_LE(MaxAbsDiff(run->output, DirectRun(r)), 1e-6);
}

std::unique_ptr<HostTier> FastHostTier() {
  auto tier = HostTier::Create(1e12);  // copies are not what these tests look at
  EXPECT_TRUE(tier.ok());
  return std::move(*tier);
}

TEST(ServeDeviceTest, OffloadRunsEveryRequestOffloadedWithTheSameImage) {
  const DiffusionRequest r = Big();
  TemplateCache cache;
  ServeDevice offload(0, MemoryPolicy::kOffload, int64_t{1} << 30, &cache, FastHostTier());
  auto run = offload.Execute(r);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->mitigations, (std::vector<std::string>{"offload:text", "offload:latent",
                                                        "offload:image", "offload:weights"}));
  EXPECT_LE(MaxAbsDiff(run->output, DirectRun(r)), 1e-6);
  // Without a host tier the device says what is missing instead of running.
  TemplateCache bare_cache;
  ServeDevice bare(0, MemoryPolicy::kOffload, int64_t{1} << 30, &bare_cache);
  auto refused = bare.Execute(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("host tier"), std::string::npos)
      << refused.status().ToString();
}

TEST(ServeDeviceTest, XemaWithAHostTierFitsAndKeepsTheImage) {
  const DiffusionRequest r = Big();
  const int64_t budget = MinimumPeakBytes(*TinyModel("tiny-t2i"), r) + 1;
  TemplateCache cache;
  ServeDevice xema(0, MemoryPolicy::kXema, budget, &cache, FastHostTier());
  const std::vector<float> reference = DirectRun(r);
  for (int i = 0; i < 2; ++i) {
    auto run = xema.Execute(r);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_EQ(run->template_hit, i == 1);
    EXPECT_LE(run->peak_bytes, budget);
    EXPECT_LE(MaxAbsDiff(run->output, reference), 1e-6);
  }
}

// A template's trace recorded whole: its peak and the weights in it.
RecordedRequest Recorded(const DiffusionRequest& r) {
  auto rec = RecordRequest(*TinyModel(r.model), r);
  EXPECT_TRUE(rec.ok()) << rec.status().ToString();
  return rec.ok() ? std::move(*rec) : RecordedRequest{};
}

// The tflite arena of a template's activations (recorded beside resident weights).
int64_t ActivationArenaBytes(DiffusionPipeline& pipeline, const DiffusionRequest& r) {
  auto rec = RecordActivations(pipeline, r, 0);
  EXPECT_TRUE(rec.ok()) << rec.status().ToString();
  if (!rec.ok()) return 0;
  auto x = Expand(rec->trace);
  auto layout = PlanLayout(*x, "tflite", LayoutOptions{});
  EXPECT_TRUE(layout.ok());
  return layout.ok() ? layout->arena_bytes : 0;
}

TEST(ServeDeviceTest, StaticKeepsOneCopyOfTheWeightsAndOneRegionForEveryTemplateOfAModel) {
  DiffusionRequest a, b;
  a.width = 32;
  a.height = 16;
  b.width = b.height = 16;
  a.steps = b.steps = 1;
  b.seed = 5;
  const RecordedRequest ra = Recorded(a), rb = Recorded(b);
  const int64_t weights = ra.weight_bytes;
  ASSERT_GT(weights, 0);
  runtime::HeapDeviceAllocator heap;
  auto loaded = DiffusionPipeline::Load(*TinyModel("tiny-t2i"), heap);
  ASSERT_TRUE(loaded.ok());
  const int64_t arena_a = ActivationArenaBytes(**loaded, a);
  const int64_t arena_b = ActivationArenaBytes(**loaded, b);
  // Room for the weights once and the larger arena, not for both arenas side by side (nor a
  // second copy of the weights).
  const int64_t budget = weights + std::max(arena_a, arena_b) + 4096;
  ASSERT_LT(budget, weights + arena_a + arena_b);
  TemplateCache cache;
  ServeDevice device(0, MemoryPolicy::kStatic, budget, &cache);
  const std::vector<float> ref_a = DirectRun(a), ref_b = DirectRun(b);
  int hits = 0;
  for (const DiffusionRequest* r : {&a, &b, &a, &b, &a, &b, &a}) {
    auto run = device.Execute(*r);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    hits += run->template_hit ? 1 : 0;
    EXPECT_EQ(run->output, r == &a ? ref_a : ref_b);
    EXPECT_EQ(run->peak_bytes, (r == &a ? ra : rb).measured_peak_bytes);
  }
  EXPECT_EQ(hits, 5);
  const DeviceSnapshot s = device.Snapshot();
  EXPECT_EQ(s.weight_loads, 1);  // switching templates reloaded nothing
  // The region is mapped at the first hit and grown only for a larger arena.
  EXPECT_EQ(s.region_maps, arena_a >= arena_b ? 1 : 2);
  EXPECT_EQ(s.peak_reserved_bytes, weights + std::max(arena_a, arena_b));
  EXPECT_EQ(s.live_bytes, weights);

  // A budget below the weights and the arena: refused, naming both.
  TemplateCache tight_cache;
  ServeDevice tight(0, MemoryPolicy::kStatic, weights + arena_a / 2, &tight_cache);
  auto refused = tight.Execute(a);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(refused.status().message().find("out of device memory"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(tight.Execute(a).status().code(), core::StatusCode::kInfeasible);  // remembered
}

TEST(ServeDeviceTest, PolicyNamesAndStrongestMitigations) {
  for (const std::string& name : MemoryPolicyNames()) {
    auto p = ParseMemoryPolicy(name);
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ(MemoryPolicyName(*p), name);
  }
  EXPECT_EQ(ParseMemoryPolicy("fast").status().message(),
            "policy: got 'fast', must be one of none, static, offload, tiling, caching, xema");
  DiffusionRequest v;
  v.model = "tiny-t2v";
  v.frames = 9;
  v.width = 32;
  v.height = 64;
  v.attention = models::AttentionMode::kChunked;
  const TinyModelSpec spec = *TinyModel("tiny-t2v");
  const DiffusionRequest s = StrongestMitigations(MemoryPolicy::kXema, spec, v);
  EXPECT_EQ(s.vae_frame_slices, 9);
  EXPECT_EQ(s.vae_tiles, 4);  // min(4, 32 / 8)
  EXPECT_EQ(s.attention_chunks, kAlwaysOnAttentionChunks);
  EXPECT_TRUE(s.offload.text_context && s.offload.latent && s.offload.image);
  EXPECT_FALSE(s.offload.idle_weights);  // xema's weights stay resident beside its arenas
  EXPECT_TRUE(StrongestMitigations(MemoryPolicy::kCaching, spec, v).offload.idle_weights);
  EXPECT_EQ(StrongestMitigations(MemoryPolicy::kNone, spec, v).vae_tiles, 1);
  EXPECT_EQ(StrongestMitigations(MemoryPolicy::kStatic, spec, v).vae_frame_slices, 1);
  const DiffusionRequest off = AlwaysOnMitigations(MemoryPolicy::kOffload, spec, v);
  EXPECT_TRUE(off.offload.any());
  EXPECT_EQ(off.vae_tiles, 1);
  EXPECT_EQ(MitigationLabels(off), (std::vector<std::string>{"offload:text", "offload:latent",
                                                             "offload:image", "offload:weights"}));
}

}  // namespace
}  // namespace tessera::xema
