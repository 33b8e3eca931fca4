#include "xema/pipeline/template_check.h"

#include <gtest/gtest.h>

#include "core/check.h"
#include "xema/pipeline/layout_allocator.h"
#include "xema/pipeline/model_file.h"
#include "xema/pipeline/pipeline_test_util.h"
#include "xema/static_layout.h"

namespace tessera::xema {
namespace {

using testing::SpecOf;

void ExpectAllHeld(const TemplateCheck& c) {
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.recorded.measured_peak_bytes, c.lower_bound_bytes);
  ASSERT_GE(c.layouts.size(), 3u);
  for (const LayoutRunRow& r : c.layouts) {
    EXPECT_TRUE(r.output_equal) << r.layout.algorithm << ": " << r.error;
    EXPECT_TRUE(r.error.empty()) << r.error;
    EXPECT_GE(r.layout.arena_bytes, c.lower_bound_bytes);
  }
  ASSERT_EQ(c.caching.size(), 2u);
  for (const CachingRunRow& r : c.caching) {
    EXPECT_TRUE(r.output_equal) << r.policy << ": " << r.error;
    EXPECT_EQ(r.stats.peak_reserved_bytes, r.replay_peak_reserved) << r.policy;
    EXPECT_GE(r.stats.peak_reserved_bytes, c.lower_bound_bytes);
  }
}

// A tiny-t2i request of w x h pixels and `steps` steps.
DiffusionRequest Image(int64_t w, int64_t h, int64_t steps) {
  DiffusionRequest r;
  r.width = w;
  r.height = h;
  r.steps = steps;
  return r;
}

TEST(TemplateCheckTest, ImageTemplateReplaysFromEveryLayoutBitwise) {
  const DiffusionRequest r = Image(32, 48, 3);
  auto c = CheckTemplate(SpecOf(r), r);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ExpectAllHeld(*c);
  EXPECT_EQ(c->recorded.trace.key.steps, 3);
  EXPECT_EQ(c->recorded.trace.provenance, "recorded");
  EXPECT_EQ(c->recorded.output.size(), static_cast<size_t>(3 * 32 * 48));
}

TEST(TemplateCheckTest, VideoAndChunkedAttentionWithoutCfg) {
  DiffusionRequest r;
  r.model = "tiny-t2v";
  r.width = 32;
  r.height = 32;
  r.frames = 5;
  r.steps = 2;
  r.cfg = false;
  r.attention = models::AttentionMode::kChunked;
  r.attention_chunks = 2;
  r.vae_frame_slices = 2;
  int calls = 0;
  TemplateCheckOptions options;
  options.progress = [&calls](int done, int total) {
    ++calls;
    EXPECT_LE(done, total);
  };
  auto c = CheckTemplate(SpecOf(r), r, options);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ExpectAllHeld(*c);
  EXPECT_EQ(calls, 1 + static_cast<int>(c->layouts.size() + c->caching.size()));
}

TEST(TemplateCheckTest, TheRecordedTraceRoundTripsThroughJson) {
  const DiffusionRequest r = Image(16, 16, 2);
  auto rec = RecordRequest(SpecOf(r), r);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  auto back = TraceFromJson(ToJson(rec->trace), "recorded");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  auto x = Expand(*back);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(LowerBoundBytes(*x), rec->measured_peak_bytes);
  EXPECT_EQ(WeightBytes(*x), rec->weight_bytes);
}

TEST(TemplateCheckTest, ActivationsRecordedApartFromResidentWeightsReplayFromTheirOwnArena) {
  const DiffusionRequest r = Image(32, 16, 2);
  auto whole = RecordRequest(SpecOf(r), r);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  runtime::HeapDeviceAllocator weights;
  auto pipeline = DiffusionPipeline::Load(SpecOf(r), weights);
  ASSERT_TRUE(pipeline.ok());
  const int64_t weight_bytes = weights.live_bytes();
  auto rec = RecordActivations(**pipeline, r, 0);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(weights.live_bytes(), weight_bytes);  // the weights stayed where they were
  EXPECT_EQ(rec->output, whole->output);
  EXPECT_EQ(rec->weight_bytes, 0);
  EXPECT_EQ(weight_bytes, whole->weight_bytes);
  EXPECT_EQ(weight_bytes + rec->measured_peak_bytes, whole->measured_peak_bytes);
  auto x = Expand(rec->trace);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(WeightBytes(*x), 0);
  EXPECT_EQ(LowerBoundBytes(*x), rec->measured_peak_bytes);
  // Two requests from one activation arena (rearmed between), the weights untouched.
  auto layout = PlanLayout(*x, "tflite", LayoutOptions{});
  ASSERT_TRUE(layout.ok());
  auto arena = LayoutDeviceAllocator::Create(*x, *layout);
  ASSERT_TRUE(arena.ok());
  for (int i = 0; i < 2; ++i) {
    if (i > 0) {
      ASSERT_TRUE((*arena)->Rearm().ok());
    }
    std::vector<float> out(whole->output.size());
    ASSERT_TRUE((*pipeline)->Run(r, out, arena->get()).ok());
    EXPECT_TRUE((*arena)->status().ok()) << (*arena)->status().ToString();
    EXPECT_EQ(out, whole->output);
    EXPECT_EQ((*arena)->live_bytes(), 0);
  }
  // Activations beyond their budget: Infeasible, and the pipeline still serves.
  auto small = RecordActivations(**pipeline, r, rec->measured_peak_bytes - 512);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), core::StatusCode::kInfeasible);
  EXPECT_EQ(weights.live_bytes(), weight_bytes);
  rec = RecordActivations(**pipeline, r, rec->measured_peak_bytes);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->output, whole->output);
}

TEST(TemplateCheckTest, ParkingWeightsNeedsOneAllocator) {
  DiffusionRequest r;
  r.width = r.height = 16;
  r.steps = 1;
  r.offload.idle_weights = true;
  auto tier = HostTier::Create(4e9);
  ASSERT_TRUE(tier.ok());
  runtime::HeapDeviceAllocator weights, activations;
  auto pipeline = DiffusionPipeline::Load(SpecOf(r), weights, tier->get());
  ASSERT_TRUE(pipeline.ok());
  std::vector<float> out(static_cast<size_t>(OutputFloats(r)));
  const core::Status s = (*pipeline)->Run(r, out, &activations);
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("idle_weights"), std::string::npos) << s.message();
  EXPECT_EQ(activations.live_bytes(), 0);
  EXPECT_TRUE((*pipeline)->Run(r, out, &weights).ok());  // the same allocator: allowed
}

TEST(TemplateCheckTest, BadRequestsNameTheField) {
  DiffusionRequest r;
  r.width = 70;
  auto rec = RecordRequest(SpecOf(r), r);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(rec.status().message().find("width"), std::string::npos);
  r = DiffusionRequest{};
  r.model = "tiny-t2v";  // not the spec's model
  EXPECT_EQ(CheckTemplate(*TinyModel("tiny-t2i"), r).status().code(),
            core::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveTinyModel("tiny-nope").status().code(), core::StatusCode::kNotFound);
  r = DiffusionRequest{};
  TemplateCheckOptions options;
  options.policies = {"tensorflow"};
  EXPECT_EQ(CheckTemplate(SpecOf(r), r, options).status().code(),
            core::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::xema

namespace tessera::xema {
namespace {

TEST(TemplateCheckTest, MinimumPeakIsALowerBoundOfTheMeasuredPeak) {
  struct Case {
    const char* model;
    int64_t w, h, frames, slices, tiles;
  };
  for (const Case& k : {Case{"tiny-t2i", 16, 16, 1, 1, 1}, Case{"tiny-t2i", 128, 96, 1, 1, 1},
                        Case{"tiny-t2v", 64, 64, 5, 1, 1}, Case{"tiny-t2v", 64, 64, 9, 3, 1},
                        Case{"tiny-t2i", 16, 16, 1, 1, 2}, Case{"tiny-t2i", 128, 96, 1, 1, 3},
                        Case{"tiny-t2v", 64, 64, 9, 3, 2}, Case{"tiny-t2i", 256, 256, 1, 1, 4}}) {
    DiffusionRequest r;
    r.model = k.model;
    r.width = k.w;
    r.height = k.h;
    r.frames = k.frames;
    r.vae_frame_slices = k.slices;
    r.vae_tiles = k.tiles;
    r.steps = 1;
    auto spec = TinyModel(r.model);
    ASSERT_TRUE(spec.ok());
    auto rec = RecordRequest(SpecOf(r), r);
    ASSERT_TRUE(rec.ok()) << rec.status().ToString();
    const int64_t bound = MinimumPeakBytes(*spec, r);
    EXPECT_LE(bound, rec->measured_peak_bytes) << k.model << " " << k.w << "x" << k.h;
    // Tight enough to be useful where the VAE's full-resolution blocks dominate.
    if (k.w >= 64) {
      EXPECT_GE(bound, rec->measured_peak_bytes * 7 / 10) << k.model << " " << k.w << "x" << k.h;
    }
  }
}

TEST(TemplateCheckTest, ARequestBeyondTheHostBudgetIsRefusedBeforeRunning) {
  DiffusionRequest r;
  r.width = 2048;
  r.height = 2048;
  r.steps = 1000;
  auto rec = RecordRequest(SpecOf(r), r, int64_t{1} << 30);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(rec.status().message().find("request 2048x2048x1: needs at least"), std::string::npos)
      << rec.status().message();
  // A budget the run itself reaches: out of device memory, not a crash.
  r = DiffusionRequest{};
  r.steps = 1;
  auto spec = TinyModel(r.model);
  ASSERT_TRUE(spec.ok());
  rec = RecordRequest(SpecOf(r), r, MinimumPeakBytes(*spec, r));
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(rec.status().message().find("out of device memory"), std::string::npos)
      << rec.status().message();
}

}  // namespace
}  // namespace tessera::xema

// Several requests of one template from one arena: Rearm restarts the replay after the
// weights, and refuses while anything but the weights is live.
namespace tessera::xema {
namespace {

TEST(LayoutRearmTest, RequestsOfATemplateRunAgainFromOneArena) {
  const TinyModelSpec spec = *TinyModel("tiny-t2i");
  DiffusionRequest r;
  r.width = 32;
  r.height = 16;
  r.steps = 1;
  auto rec = RecordRequest(spec, r);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  auto x = Expand(rec->trace);
  ASSERT_TRUE(x.ok());
  auto layout = PlanLayout(*x, "tflite");
  ASSERT_TRUE(layout.ok());
  auto arena = LayoutDeviceAllocator::Create(*x, *layout);
  ASSERT_TRUE(arena.ok());
  {
    auto p = DiffusionPipeline::Load(spec, **arena);
    ASSERT_TRUE(p.ok());
    DiffusionRequest other = r;
    other.seed = 11;  // same template, another image
    std::vector<float> out(static_cast<size_t>(OutputFloats(r)));
    for (const DiffusionRequest* req : {&r, &other, &r}) {
      ASSERT_TRUE((*arena)->Rearm().ok());
      ASSERT_TRUE((*p)->Run(*req, out).ok());
      ASSERT_TRUE((*arena)->status().ok()) << (*arena)->status().ToString();
      if (req == &r) {
        EXPECT_EQ(out, rec->output);
      }
    }
    ASSERT_TRUE((*arena)->Rearm().ok());
    auto extra = (*arena)->Allocate(512, "stray", TensorKind::kActivation);
    EXPECT_FALSE(extra.ok());  // outside an op: diverges from the trace
    EXPECT_EQ((*arena)->Rearm().code(), core::StatusCode::kFailedPrecondition);
  }
}

}  // namespace
}  // namespace tessera::xema
