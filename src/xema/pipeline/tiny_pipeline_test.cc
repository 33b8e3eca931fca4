#include "xema/pipeline/tiny_pipeline.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/alloc_stats.h"
#include "models/vae_tiling.h"
#include "xema/pipeline/pipeline_test_util.h"

namespace tessera::xema {
namespace {

// Records the ops and allocations of a run, grouped by step.
class Recorder final : public runtime::AllocationObserver {
 public:
  struct Alloc {
    std::string name;
    int64_t bytes;
    bool operator==(const Alloc&) const = default;
  };
  void OnAllocate(int64_t, const std::string& name, TensorKind, int64_t bytes,
                  int64_t op) override {
    if (op < 0) ++outside_ops;
    allocs[step_].push_back({name, bytes});
  }
  void OnRelease(int64_t, int64_t) override { ++releases[step_]; }
  void OnBeginOp(int64_t, const runtime::OpInfo& info) override {
    step_ =
        info.section == Section::kBody ? info.step : (info.section == Section::kPrologue ? -1 : -2);
    ops[step_].push_back(info.name);
    if (info.section == Section::kBody) {
      EXPECT_EQ(info.phase, PhaseName(Phase::kDenoise)) << info.name;
    }
  }
  void OnEndOp(int64_t, double, double) override {}

  int64_t outside_ops = 0;
  std::map<int, std::vector<std::string>> ops;  // step (-1 prologue, -2 epilogue) -> op names
  std::map<int, std::vector<Alloc>> allocs;
  std::map<int, int64_t> releases;

 private:
  int step_ = -1;
};

struct Loaded {
  runtime::HeapDeviceAllocator allocator;
  std::unique_ptr<DiffusionPipeline> pipeline;
};

Loaded& Shared(const std::string& model) {
  static std::map<std::string, std::unique_ptr<Loaded>> cache;
  auto& slot = cache[model];
  if (!slot) {
    slot = std::make_unique<Loaded>();
    auto spec = TinyModel(model);
    CHECK(spec.ok());
    auto p = DiffusionPipeline::Load(*spec, slot->allocator);
    CHECK(p.ok()) << p.status().ToString();
    slot->pipeline = std::move(*p);
  }
  return *slot;
}

DiffusionRequest Small(int64_t steps = 2) {
  DiffusionRequest r;
  r.width = 32;
  r.height = 48;
  r.steps = steps;
  return r;
}

std::vector<float> RunOk(const DiffusionRequest& r) {
  Loaded& l = Shared(r.model);
  std::vector<float> out(OutputFloats(r));
  const core::Status st = l.pipeline->Run(r, out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(l.allocator.live_bytes(), l.pipeline->WeightBytes());
  EXPECT_FALSE(l.allocator.in_op());
  return out;
}

TEST(TinyPipelineTest, PresetsAndKeys) {
  EXPECT_EQ(TinyModelNames(), (std::vector<std::string>{"tiny-t2i", "tiny-t2v"}));
  auto v = TinyModel("tiny-t2v");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->video);
  EXPECT_EQ(v->temporal_factor, 4);
  EXPECT_EQ(v->dit.in_channels, 64);
  auto bad = TinyModel("big");
  EXPECT_EQ(bad.status().code(), core::StatusCode::kNotFound);
  EXPECT_NE(bad.status().message().find("tiny-t2i, tiny-t2v"), std::string::npos);
  DiffusionRequest r;
  r.frames = 1;
  const TraceKey key = KeyOf(r);
  EXPECT_EQ(key.model, "tiny-t2i");
  EXPECT_EQ(key.dtype, "f32");
  EXPECT_EQ(key.sp_degree, 1);
  EXPECT_TRUE(key.cfg);
  EXPECT_EQ(OutputFloats(r), 3 * 64 * 64);
}

TEST(TinyPipelineTest, RunIsDeterministicAndSeeded) {
  const DiffusionRequest r = Small();
  const auto a = RunOk(r), b = RunOk(r);
  EXPECT_EQ(a, b);
  for (float v : a) ASSERT_TRUE(std::isfinite(v));
  EXPECT_NE(*std::min_element(a.begin(), a.end()), *std::max_element(a.begin(), a.end()));
  DiffusionRequest other = r;
  other.seed = 2;
  EXPECT_NE(RunOk(other), a);
  DiffusionRequest prompt = r;
  prompt.prompt = "a blue sphere";
  EXPECT_NE(RunOk(prompt), a);
  DiffusionRequest no_cfg = r;
  no_cfg.cfg = false;
  const auto c = RunOk(no_cfg);
  EXPECT_NE(c, a);
  for (float v : c) ASSERT_TRUE(std::isfinite(v));
}

TEST(TinyPipelineTest, ChunkedAttentionMatchesFused) {
  const DiffusionRequest r = Small();
  const auto fused = RunOk(r);
  DiffusionRequest chunked = r;
  chunked.attention = models::AttentionMode::kChunked;
  chunked.attention_chunks = 3;
  const auto got = RunOk(chunked);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - fused[i]));
    scale = std::max(scale, std::abs(static_cast<double>(fused[i])));
  }
  EXPECT_LE(diff, 1e-4 * scale);
}

TEST(TinyPipelineTest, StepsRepeatTheSameOpsAndAllocations) {
  Loaded& l = Shared("tiny-t2i");
  Recorder rec;
  l.allocator.set_observer(&rec);
  const DiffusionRequest r = Small(3);
  std::vector<float> out(OutputFloats(r));
  const core::Status st = l.pipeline->Run(r, out);
  l.allocator.set_observer(nullptr);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rec.outside_ops, 0);
  const std::vector<std::string> body = {"dit.embed",  "dit.block0", "dit.block1",  "dit.block2",
                                         "dit.block3", "dit.final",  "cfg.combine", "euler.step"};
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(rec.ops[step], body) << "step " << step;
    EXPECT_EQ(rec.allocs[step], rec.allocs[0]) << "step " << step;
  }
  EXPECT_EQ(rec.ops[-1].front(), "text.cond.embed");
  EXPECT_EQ(rec.ops[-1].back(), "latent.init");
  EXPECT_EQ(rec.ops[-2].front(), "vae.unpatchify");
  EXPECT_EQ(rec.ops[-2].back(), "vae.output");
  // Step frees: the same in every step but the last, which also frees the text context.
  EXPECT_EQ(rec.releases[0], rec.releases[1]);
  EXPECT_EQ(rec.releases[2], rec.releases[1] + 2);
}

TEST(TinyPipelineTest, VideoFramesFollowTheirLatentFrames) {
  DiffusionRequest r = Small();
  r.model = "tiny-t2v";
  r.frames = 5;
  const auto a = RunOk(r);
  for (float v : a) ASSERT_TRUE(std::isfinite(v));
  const int64_t frame = 3 * r.width * r.height;
  // Frames 1..4 decode latent frame 1; frame 0 decodes latent frame 0.
  EXPECT_TRUE(std::equal(a.begin() + frame, a.begin() + 2 * frame, a.begin() + 4 * frame));
  EXPECT_FALSE(std::equal(a.begin(), a.begin() + frame, a.begin() + frame));
  r.vae_frame_slices = 2;
  EXPECT_EQ(RunOk(r), a);
}

TEST(TinyPipelineTest, EveryBadRequestFieldIsNamed) {
  auto spec = TinyModel("tiny-t2i");
  auto video = TinyModel("tiny-t2v");
  ASSERT_TRUE(spec.ok() && video.ok());
  EXPECT_TRUE(ValidateRequest(*spec, DiffusionRequest{}).ok());
  struct Case {
    const char* field;
    std::function<void(DiffusionRequest&)> edit;
    bool video = false;
  };
  const std::vector<Case> cases = {
      {"request.model", [](DiffusionRequest& r) { r.model = "tiny-t2v"; }},
      {"request.width: got 70, must be a positive multiple of 16",
       [](DiffusionRequest& r) { r.width = 70; }},
      {"request.width: got 0", [](DiffusionRequest& r) { r.width = 0; }},
      {"request.height: got 4096", [](DiffusionRequest& r) { r.height = 4096; }},
      {"request.frames: got 5", [](DiffusionRequest& r) { r.frames = 5; }},
      {"request.frames: got 4",
       [](DiffusionRequest& r) {
         r.model = "tiny-t2v";
         r.frames = 4;
       },
       true},
      {"request.frames: got 133",
       [](DiffusionRequest& r) {
         r.model = "tiny-t2v";
         r.frames = 133;
       },
       true},
      {"request.steps: got 0", [](DiffusionRequest& r) { r.steps = 0; }},
      {"request.steps: got 1001", [](DiffusionRequest& r) { r.steps = 1001; }},
      {"request.guidance", [](DiffusionRequest& r) { r.guidance = NAN; }},
      {"request.guidance", [](DiffusionRequest& r) { r.guidance = -1; }},
      {"request.prompt", [](DiffusionRequest& r) { r.prompt.assign(5000, 'a'); }},
      {"request.attention:", [](DiffusionRequest& r) { r.attention = models::AttentionMode{7}; }},
      {"request.attention_chunks: got 0", [](DiffusionRequest& r) { r.attention_chunks = 0; }},
      {"request.vae_frame_slices: got 2", [](DiffusionRequest& r) { r.vae_frame_slices = 2; }},
      {"request.vae_frame_slices: got 0", [](DiffusionRequest& r) { r.vae_frame_slices = 0; }},
  };
  for (const Case& c : cases) {
    DiffusionRequest r;
    c.edit(r);
    const core::Status st = ValidateRequest(c.video ? *video : *spec, r);
    EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument) << c.field;
    EXPECT_EQ(st.message().find('\n'), std::string::npos);
    EXPECT_EQ(st.message().rfind(c.field, 0), 0u) << st.message();
  }
  // Run validates first, and checks the output size.
  Loaded& l = Shared("tiny-t2i");
  std::vector<float> out(10);
  DiffusionRequest r = Small();
  EXPECT_EQ(l.pipeline->Run(r, out).code(), core::StatusCode::kInvalidArgument);
  r.steps = 0;
  out.resize(OutputFloats(r));
  EXPECT_EQ(l.pipeline->Run(r, out).code(), core::StatusCode::kInvalidArgument);
}

TEST(TinyPipelineTest, OutOfMemoryIsInfeasibleAndLeaksNothing) {
  const int64_t weights = Shared("tiny-t2i").pipeline->WeightBytes();
  auto spec = TinyModel("tiny-t2i");
  ASSERT_TRUE(spec.ok());
  {
    runtime::HeapDeviceAllocator tiny(weights / 2);
    auto p = DiffusionPipeline::Load(*spec, tiny);
    EXPECT_EQ(p.status().code(), core::StatusCode::kInfeasible);
    EXPECT_EQ(tiny.live_bytes(), 0);
  }
  // Fails in the text encoder, and at the VAE's im2col spike (about 10.8 MiB above the
  // weights at 64x64) after the whole denoising loop.
  for (int64_t extra : {int64_t{64} << 10, int64_t{10} << 20}) {
    runtime::HeapDeviceAllocator allocator(weights + extra);
    auto p = DiffusionPipeline::Load(*spec, allocator);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ((*p)->WeightBytes(), weights);
    DiffusionRequest r;  // 64x64, 4 steps, cfg
    std::vector<float> out(OutputFloats(r));
    const core::Status st = (*p)->Run(r, out);
    EXPECT_EQ(st.code(), core::StatusCode::kInfeasible) << st.ToString();
    EXPECT_EQ(allocator.live_bytes(), weights);
    EXPECT_FALSE(allocator.in_op());
  }
}

TEST(TinyPipelineTest, HeapOutsideTheAllocatorStaysSmall) {
  if (!core::AllocStatsEnabled()) GTEST_SKIP() << "operator new hooks not linked (sanitizer build)";
  Loaded& l = Shared("tiny-t2i");
  DiffusionRequest r;  // 64x64, 4 steps, cfg
  std::vector<float> out(OutputFloats(r));
  // The first run may include the GEMM library's one-time caches (kept for the process); the
  // second shows the steady state, which must not keep anything.
  for (int run = 0; run < 2; ++run) {
    const int64_t before = core::AllocatedBytes();
    core::ResetPeakAllocatedBytes();
    const core::Status st = l.pipeline->Run(r, out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    const int64_t growth = core::PeakAllocatedBytes() - before;
    EXPECT_LT(growth, int64_t{1} << 20) << growth << " bytes of heap during run " << run;
    if (run == 1) {
      EXPECT_LE(core::AllocatedBytes(), before);
    }
    RecordProperty(fmt::format("heap_growth_bytes_run{}", run), std::to_string(growth));
  }
}

TEST(TinyPipelineTest, FfnChunksAndVaeTilesKeepTheOutput) {
  for (const char* model : {"tiny-t2i", "tiny-t2v"}) {
    DiffusionRequest r = Small();
    r.model = model;
    if (r.model == "tiny-t2v") {
      r.frames = 5;
      r.vae_frame_slices = 2;
    }
    const auto reference = RunOk(r);
    for (const auto& [chunks, tiles] : {std::pair<int64_t, int64_t>{1, 2},
                                        {3, 1},
                                        {7, 3},
                                        {4096, 1},
                                        {1, 64},
                                        {4096, 64},
                                        {666, 1},
                                        {64, 1}}) {
      DiffusionRequest m = r;
      m.ffn_chunks = chunks;
      m.vae_tiles = tiles;
      const auto got = RunOk(m);
      const double diff = testing::MaxAbsDiff(got, reference);
      EXPECT_LE(diff, 1e-6) << model << " ffn_chunks " << chunks << " vae_tiles " << tiles;
      RecordProperty(fmt::format("max_abs_diff_{}_ffn{}_tiles{}", model, chunks, tiles),
                     std::to_string(diff));
    }
  }
  auto spec = TinyModel("tiny-t2i");
  ASSERT_TRUE(spec.ok());
  DiffusionRequest r;
  r.ffn_chunks = 0;
  EXPECT_EQ(ValidateRequest(*spec, r).message().rfind("request.ffn_chunks: got 0", 0), 0u);
  r.ffn_chunks = 1;
  r.vae_tiles = 65;
  EXPECT_EQ(ValidateRequest(*spec, r).message().rfind("request.vae_tiles: got 65", 0), 0u);
}

// 256x256, one step: the peak falls with VAE tiles, and the workspaces of the DiT's block ops
// and the VAE's full-resolution block ops have the sizes of the formulas.
TEST(TinyPipelineTest, MitigationsCutThePeakByTheFormulas) {
  Loaded& l = Shared("tiny-t2i");
  const TinyModelSpec& spec = l.pipeline->spec();
  DiffusionRequest r = Small(1);
  r.width = r.height = 256;
  const int64_t latent = 256 / spec.spatial_factor, factor = spec.spatial_factor;
  const int64_t rows = 2 * (spec.text.tokens + (latent / spec.patch) * (latent / spec.patch));
  const std::vector<int64_t>& ch = spec.vae.channels;
  const int64_t n = static_cast<int64_t>(ch.size());
  std::vector<int64_t> peaks;
  for (const auto& [chunks, tiles] : {std::pair<int64_t, int64_t>{1, 1}, {4, 2}, {16, 4}}) {
    r.ffn_chunks = chunks;
    r.vae_tiles = tiles;
    std::vector<float> out(OutputFloats(r));
    l.allocator.ResetPeak();
    testing::OpPeakObserver observer(l.allocator);
    ASSERT_TRUE(l.pipeline->Run(r, out).ok());
    peaks.push_back(l.allocator.peak_bytes());
    const int64_t ffn_rows = models::FfnChunkRows(rows, chunks);
    EXPECT_EQ(observer.Find("dit.block0")->allocs.at("dit.block0.ffn"),
              AlignBytes(4 * ffn_rows * spec.dit.ffn_hidden));
    const std::vector<models::TileSpan> spans = models::TileSpans(latent, tiles, 2);
    for (size_t i = 0; i < spans.size(); ++i) {
      for (size_t j = 0; j < spans.size(); ++j) {
        const std::string prefix = tiles == 1 ? "vae" : fmt::format("vae.tile{}_{}", i, j);
        const int64_t plane = spans[i].size() * spans[j].size() * factor * factor;
        for (const int64_t b : {n - 1, n}) {  // the full-resolution blocks
          const std::string name = fmt::format("{}.block{}", prefix, b);
          const testing::OpPeakObserver::Op* op = observer.Find(name);
          ASSERT_NE(op, nullptr) << name;
          EXPECT_EQ(op->allocs.at(name + ".im2col"), AlignBytes(4 * 9 * ch[b - 1] * plane)) << name;
        }
      }
    }
    EXPECT_LE(MinimumPeakBytes(spec, r), peaks.back());
  }
  EXPECT_LT(peaks[1], peaks[0]);
  EXPECT_LT(peaks[2], peaks[1]);
  RecordProperty("peak_bytes_256_tiles_1_2_4",
                 fmt::format("{} {} {}", peaks[0], peaks[1], peaks[2]));
}

TEST(TinyPipelineTest, OutOfMemoryInATiledDecodeLeaksNothing) {
  Loaded& l = Shared("tiny-t2i");
  const int64_t weights = l.pipeline->WeightBytes();
  DiffusionRequest r;  // 64x64, 4 steps, cfg
  r.steps = 1;
  r.vae_tiles = 2;
  std::vector<float> out(OutputFloats(r));
  l.allocator.ResetPeak();
  ASSERT_TRUE(l.pipeline->Run(r, out).ok());
  const int64_t peak = l.allocator.peak_bytes();
  auto spec = TinyModel("tiny-t2i");
  ASSERT_TRUE(spec.ok());
  // Just below the tiled peak, and lower: each fails inside the VAE's tiles.
  for (const int64_t below : {int64_t{1}, int64_t{1} << 20, int64_t{3} << 20}) {
    runtime::HeapDeviceAllocator allocator(peak - below);
    auto p = DiffusionPipeline::Load(*spec, allocator);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    testing::OpPeakObserver observer(allocator);
    const core::Status st = (*p)->Run(r, out);
    EXPECT_EQ(st.code(), core::StatusCode::kInfeasible) << st.ToString();
    EXPECT_NE(observer.ops().back().name.find("vae.tile"), std::string::npos)
        << observer.ops().back().name;
    EXPECT_EQ(allocator.live_bytes(), weights);
    EXPECT_FALSE(allocator.in_op());
  }
}

}  // namespace
}  // namespace tessera::xema
