// Batch > 1 (tiny_pipeline.h: DiffusionRequest::batch_mates): several requests of one template
// in one DiT pass. models::TinyDit::Forward over G distinct latents equals each latent's sequences
// run alone; a pipeline batch equals each request run alone; its recorded trace replays in a
// static-layout arena bitwise; the sequence-parallel run equals the one-device batch; bad
// batches are named. Helpers are prefixed BatchTest (unity builds share anonymous namespaces).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/in_process_communicator.h"
#include "core/check.h"
#include "core/rng.h"
#include "kernels/gemm.h"
#include "models/tiny_dit.h"
#include "xema/pipeline/layout_allocator.h"
#include "xema/pipeline/pipeline_test_util.h"
#include "xema/pipeline/sp_dit.h"
#include "xema/pipeline/template_check.h"
#include "xema/pipeline/tiny_pipeline.h"
#include "xema/static_layout.h"

namespace tessera::xema {
namespace {

constexpr double kBatchTestOpTimeoutS = 60;

std::vector<float> BatchTestRandom(uint64_t seed, int64_t n) {
  core::Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return v;
}

double BatchTestScale(std::span<const float> v) {
  double scale = 0;
  for (float x : v) scale = std::max(scale, std::abs(static_cast<double>(x)));
  return scale;
}

// The largest |diff| between a batch and its parts run alone relative to the output scale, and
// whether every output was bitwise equal.
struct BatchTestDiffs {
  double rel = 0;
  bool bitwise = true;
};

// A small DiT with text, and seeded inputs of B sequences over G latents.
struct BatchTestDitCase {
  models::SmallDitConfig config;
  int64_t text_hidden = 16, tokens = 12, text_tokens = 5, batch = 6, latents = 3;
  std::vector<float> latent, ctx, pool;  // (G, N, C_in), (B, T, Hd), (B, Hd)
};

BatchTestDitCase BatchTestMakeDitCase(uint64_t seed, int64_t batch, int64_t latents) {
  BatchTestDitCase c;
  c.config.in_channels = 8;
  c.config.hidden = 32;
  c.config.num_heads = 4;
  c.config.num_layers = 2;
  c.config.ffn_hidden = 64;
  c.config.timestep_freq_dim = 16;
  c.config.modulation_init_std = 0.5f;  // modulation visibly active
  c.config.init_seed = seed + 100;
  c.batch = batch;
  c.latents = latents;
  const int64_t hd = c.config.hidden;
  c.latent = BatchTestRandom(seed + 1, latents * c.tokens * c.config.in_channels);
  c.ctx = BatchTestRandom(seed + 2, batch * c.text_tokens * hd);
  c.pool = BatchTestRandom(seed + 3, batch * hd);
  return c;
}

// Runs `sequences` of the case (their text rows, latents by b % G unless `own_latent`, which
// passes latent own_latent to every sequence as G = 1) through Forward (or, with a group,
// SequenceParallelForward) and returns "dit.out".
std::vector<float> BatchTestForward(const BatchTestDitCase& c,
                                    const std::vector<int64_t>& sequences, int64_t latents,
                                    int64_t own_latent, comm::Communicator* group = nullptr) {
  runtime::HeapDeviceAllocator allocator;
  auto dit = models::TinyDit::Create(c.config, c.text_hidden, 3, allocator);
  CHECK(dit.ok()) << dit.status().ToString();
  const int64_t hd = c.config.hidden, b_n = static_cast<int64_t>(sequences.size());
  auto ctx = allocator.AllocateF32(b_n * c.text_tokens * hd, "ctx", TensorKind::kActivation);
  auto pool = allocator.AllocateF32(b_n * hd, "pool", TensorKind::kActivation);
  CHECK(ctx.ok() && pool.ok());
  for (int64_t i = 0; i < b_n; ++i) {
    const int64_t b = sequences[static_cast<size_t>(i)];
    std::copy_n(c.ctx.data() + b * c.text_tokens * hd, c.text_tokens * hd,
                ctx->f32() + i * c.text_tokens * hd);
    std::copy_n(c.pool.data() + b * hd, hd, pool->f32() + i * hd);
  }
  models::TinyDit::Input in;
  const int64_t latent_floats = c.tokens * c.config.in_channels;
  in.latent = c.latent.data() + (own_latent >= 0 ? own_latent * latent_floats : 0);
  in.image_tokens = c.tokens;
  in.t = 0.7f;
  in.batch = b_n;
  in.latents = latents;
  in.text_ctx = &*ctx;
  in.text_tokens = c.text_tokens;
  in.pool_ctx = &*pool;
  const runtime::OpContext body{PhaseName(Phase::kDenoise), Section::kBody, 0};
  auto out = group == nullptr
                 ? dit->Forward(allocator, in, {models::AttentionMode::kFused, 1, 1}, body)
                 : SequenceParallelForward(*dit, allocator, group, group->rank(), in,
                                           {models::AttentionMode::kFused, 1, 1}, body);
  CHECK(out.ok()) << out.status().ToString();
  return {out->f32(), out->f32() + out->f32_count()};
}

// Forward over G latents against each latent's sequences alone, on seeded random inputs.
BatchTestDiffs BatchTestDitLatentsVsAlone() {
  double worst = 0;
  bool bitwise = true;
  for (const auto& [batch, latents] : {std::pair<int64_t, int64_t>{6, 3}, {4, 2}, {2, 2}}) {
    const BatchTestDitCase c =
        BatchTestMakeDitCase(static_cast<uint64_t>(batch * 10 + latents), batch, latents);
    std::vector<int64_t> all(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) all[static_cast<size_t>(b)] = b;
    const std::vector<float> joint = BatchTestForward(c, all, latents, -1);
    const int64_t seq_floats = c.tokens * c.config.in_channels;
    CHECK_EQ(static_cast<int64_t>(joint.size()), batch * seq_floats);
    const double scale = BatchTestScale(joint);
    for (int64_t g = 0; g < latents; ++g) {
      std::vector<int64_t> mine;
      for (int64_t b = g; b < batch; b += latents) mine.push_back(b);
      const std::vector<float> alone = BatchTestForward(c, mine, 1, g);
      for (size_t i = 0; i < mine.size(); ++i) {
        const std::span<const float> got(joint.data() + mine[i] * seq_floats,
                                         static_cast<size_t>(seq_floats));
        const std::span<const float> want(alone.data() + i * seq_floats,
                                          static_cast<size_t>(seq_floats));
        const double diff = testing::MaxAbsDiff(got, want);
        worst = std::max(worst, diff / scale);
        bitwise = bitwise && diff == 0;
        EXPECT_LE(diff, 1e-5 * scale) << "B " << batch << " G " << latents << " seq " << mine[i];
      }
    }
  }
  return {worst, bitwise};
}

TEST(BatchPipelineTest, DitOverDistinctLatentsEqualsEachLatentAlone) {
  // Measured (one BLAS thread, 2-core AMD EPYC): oneDNN bitwise, OpenBLAS 7.7e-7 of the scale.
  testing::ForEachGemmBackend([&](kernels::GemmBackend backend) {
    const BatchTestDiffs d = BatchTestDitLatentsVsAlone();
    const char* name = kernels::GemmBackendName(backend);
    EXPECT_LE(d.rel, 1e-5) << name;
    std::printf("[ batch dit ] %s: latents vs alone max |diff| / max |out| = %.3g (%s)\n", name,
                d.rel, d.bitwise ? "bitwise" : "not bitwise");
  });
}

TEST(BatchPipelineTest, SequenceParallelDitOverDistinctLatentsEqualsOneDevice) {
  const BatchTestDitCase c = BatchTestMakeDitCase(5, 4, 2);
  const std::vector<int64_t> all = {0, 1, 2, 3};
  const std::vector<float> one = BatchTestForward(c, all, 2, -1);
  const double scale = BatchTestScale(one);
  for (int d : {2, 4}) {
    std::vector<std::vector<float>> outs(static_cast<size_t>(d));
    comm::RunInProcessRanks(d, [&](comm::Communicator& world) {
      CHECK(kernels::SetBlasNumThreads(1).ok());
      world.set_op_timeout_s(kBatchTestOpTimeoutS);
      outs[static_cast<size_t>(world.rank())] = BatchTestForward(c, all, 2, -1, &world);
    });
    for (int m = 0; m < d; ++m) {
      EXPECT_LE(testing::MaxAbsDiff(outs[static_cast<size_t>(m)], one), 1e-5 * scale)
          << "d " << d << " member " << m;
    }
  }
}

TEST(BatchPipelineTest, DitRefusesLatentsNotDividingTheBatch) {
  const BatchTestDitCase c = BatchTestMakeDitCase(9, 4, 2);
  runtime::HeapDeviceAllocator allocator;
  auto dit = models::TinyDit::Create(c.config, c.text_hidden, 3, allocator);
  ASSERT_TRUE(dit.ok());
  models::TinyDit::Input in;
  in.latent = c.latent.data();
  in.image_tokens = c.tokens;
  in.batch = 4;
  for (int64_t latents : {0, 3, 5}) {
    in.latents = latents;
    auto out = dit->Forward(allocator, in, {}, {PhaseName(Phase::kDenoise), Section::kBody, 0});
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find("latents: got " + std::to_string(latents)),
              std::string::npos)
        << out.status().ToString();
  }
  EXPECT_FALSE(allocator.in_op());
  EXPECT_EQ(allocator.live_bytes(), dit->WeightBytes());
}

const std::vector<BatchMate>& BatchTestMates() {
  static const std::vector<BatchMate> mates = {
      {"a blue sphere on green grass", 11, 6.0f},
      {"", 23, 1.5f},
      {"three small boxes", 5, 0.0f},
  };
  return mates;
}

DiffusionRequest BatchTestRequest(const char* model, int64_t width, int64_t height, bool cfg,
                                  int64_t batch) {
  DiffusionRequest r;
  r.model = model;
  r.width = width;
  r.height = height;
  r.frames = std::string(model) == "tiny-t2v" ? 5 : 1;
  r.steps = 2;
  r.cfg = cfg;
  r.prompt = "a red cube on a wooden table";
  r.seed = 7;
  r.guidance = 3.5f;
  r.batch_mates.assign(BatchTestMates().begin(), BatchTestMates().begin() + (batch - 1));
  return r;
}

// Request j of a batch as a request of its own.
DiffusionRequest BatchTestAlone(const DiffusionRequest& r, int64_t j) {
  DiffusionRequest one = r;
  one.batch_mates.clear();
  if (j > 0) {
    const BatchMate& m = r.batch_mates[static_cast<size_t>(j - 1)];
    one.prompt = m.prompt;
    one.seed = m.seed;
    one.guidance = m.guidance;
  }
  return one;
}

struct BatchTestRun {
  core::Status status;
  std::vector<float> output;
  int64_t peak_bytes = 0;
  bool clean = false;
  std::vector<std::string> epilogue;  // op names from the first unpatchify or "sp.done" on
};

BatchTestRun BatchTestRunOn(DiffusionPipeline& p, runtime::HeapDeviceAllocator& allocator,
                            const DiffusionRequest& r, const SpMember* sp = nullptr) {
  BatchTestRun run;
  const bool decodes = sp == nullptr || sp->member == 0;
  run.output.assign(decodes ? static_cast<size_t>(OutputFloats(r)) : 0, 0.0f);
  allocator.ResetPeak();
  {
    testing::OpPeakObserver observer(allocator);
    run.status = p.Run(r, run.output, nullptr, sp);
    bool epi = false;
    for (const auto& op : observer.ops()) {
      if (op.name == "vae.unpatchify" || op.name == "sp.done") epi = true;
      if (epi) run.epilogue.push_back(op.name);
    }
  }
  run.peak_bytes = allocator.peak_bytes();
  run.clean = !allocator.in_op() && allocator.live_bytes() == p.WeightBytes();
  return run;
}

BatchTestDiffs BatchTestBatchVsAlone() {
  struct Case {
    const char* model;
    int64_t width, height;
    bool cfg;
    int64_t batch;
  };
  const Case cases[] = {{"tiny-t2i", 32, 32, true, 2},  {"tiny-t2i", 32, 32, true, 3},
                        {"tiny-t2i", 32, 32, false, 2}, {"tiny-t2i", 32, 32, false, 3},
                        {"tiny-t2i", 64, 32, true, 2},  {"tiny-t2v", 32, 32, true, 2}};
  BatchTestDiffs d;
  for (const Case& c : cases) {
    const DiffusionRequest r = BatchTestRequest(c.model, c.width, c.height, c.cfg, c.batch);
    SCOPED_TRACE(::testing::Message() << c.model << " " << c.width << "x" << c.height << " cfg "
                                      << c.cfg << " batch " << c.batch);
    runtime::HeapDeviceAllocator allocator;
    auto p = DiffusionPipeline::Load(testing::SpecOf(r), allocator);
    CHECK(p.ok()) << p.status().ToString();
    const BatchTestRun batched = BatchTestRunOn(**p, allocator, r);
    CHECK(batched.status.ok()) << batched.status.ToString();
    EXPECT_TRUE(batched.clean);
    const int64_t each = OutputFloats(BatchTestAlone(r, 0));
    CHECK_EQ(static_cast<int64_t>(batched.output.size()), c.batch * each);
    std::vector<std::vector<float>> alone;
    for (int64_t j = 0; j < c.batch; ++j) {
      const BatchTestRun one = BatchTestRunOn(**p, allocator, BatchTestAlone(r, j));
      CHECK(one.status.ok()) << one.status.ToString();
      const double scale = std::max(1.0, BatchTestScale(one.output));
      const std::span<const float> got(batched.output.data() + j * each, static_cast<size_t>(each));
      const double diff = testing::MaxAbsDiff(got, one.output);
      d.rel = std::max(d.rel, diff / scale);
      d.bitwise = d.bitwise && diff == 0;
      alone.push_back(one.output);
    }
    // The requests really differ (different prompts, seeds, guidance).
    EXPECT_GT(testing::MaxAbsDiff(alone[0], alone[1]), 1e-2);
    // Epilogue: request after request, request j >= 1 named "vae<j>".
    EXPECT_EQ(batched.epilogue.front(), "vae.unpatchify");
    EXPECT_EQ(batched.epilogue.back(), "vae" + std::to_string(c.batch - 1) + ".output");
  }
  return d;
}

TEST(BatchPipelineTest, BatchEqualsEachRequestAlone) {
  // Measured with one BLAS thread (this binary's set-up) on a 2-core AMD EPYC: oneDNN 2.6.3
  // bitwise equal; OpenBLAS 0.3.21 2.1e-6 of max(1, max |output|) (its kernels round rows
  // differently with the call's row count, and a batch's GEMMs run over more rows). The bound
  // leaves ~5x of that.
  testing::ForEachGemmBackend([&](kernels::GemmBackend backend) {
    const BatchTestDiffs d = BatchTestBatchVsAlone();
    const char* name = kernels::GemmBackendName(backend);
    EXPECT_LE(d.rel, 1e-5) << name;
    std::printf("[ batch run ] %s: batch vs alone max |diff| / max(1, max |out|) = %.3g (%s)\n",
                name, d.rel, d.bitwise ? "bitwise" : "not bitwise");
  });
}

TEST(BatchPipelineTest, RecordedBatchReplaysBitwiseInItsLayoutArena) {
  const DiffusionRequest r = BatchTestRequest("tiny-t2i", 32, 32, true, 2);
  runtime::HeapDeviceAllocator weights;
  auto p = DiffusionPipeline::Load(testing::SpecOf(r), weights);
  ASSERT_TRUE(p.ok());
  auto rec = RecordActivations(**p, r, 0);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->trace.key.batch, 2);
  EXPECT_NE(Describe(rec->trace).find("batch 2"), std::string::npos);
  // Op names: each request's prompt encoded, the empty prompt once; each request decoded.
  std::vector<std::string> names;
  for (const TraceOp& op : rec->trace.prologue) names.push_back(op.name);
  for (const TraceOp& op : rec->trace.epilogue) names.push_back(op.name);
  for (const char* want :
       {"text.cond.final", "text.cond1.final", "text.uncond.final", "dit.text_proj", "latent.init",
        "vae.unpatchify", "vae.output", "vae1.unpatchify", "vae1.block0", "vae1.output"}) {
    EXPECT_EQ(std::count(names.begin(), names.end(), want), 1) << want;
  }
  EXPECT_EQ(std::count(names.begin(), names.end(), "text.uncond1.final"), 0);
  // The trace file round trip keeps the batch.
  auto back = TraceFromJson(ToJson(rec->trace), "<rt>");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->key.batch, 2);
  auto x = Expand(rec->trace);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(LowerBoundBytes(*x), rec->measured_peak_bytes);
  auto layout = PlanLayout(*x, "tflite", LayoutOptions{});
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  auto arena = LayoutDeviceAllocator::Create(*x, *layout);
  ASSERT_TRUE(arena.ok());
  for (int i = 0; i < 2; ++i) {
    if (i > 0) {
      ASSERT_TRUE((*arena)->Rearm().ok());
    }
    std::vector<float> out(rec->output.size());
    ASSERT_TRUE((*p)->Run(r, out, arena->get()).ok());
    EXPECT_TRUE((*arena)->status().ok()) << (*arena)->status().ToString();
    EXPECT_TRUE(out == rec->output) << "run " << i;
    EXPECT_EQ((*arena)->live_bytes(), 0);
  }
  // Peak bytes grow with the batch.
  auto single = RecordActivations(**p, BatchTestAlone(r, 0), 0);
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  EXPECT_EQ(single->trace.key.batch, 1);
  EXPECT_FALSE(ToJson(single->trace)["key"].contains("batch"));
  EXPECT_GT(rec->measured_peak_bytes, single->measured_peak_bytes);
  const DiffusionRequest r3 = BatchTestRequest("tiny-t2i", 32, 32, true, 3);
  auto triple = RecordActivations(**p, r3, 0);
  ASSERT_TRUE(triple.ok()) << triple.status().ToString();
  EXPECT_GT(triple->measured_peak_bytes, rec->measured_peak_bytes);
}

TEST(BatchPipelineTest, SequenceParallelBatchEqualsOneDevice) {
  const DiffusionRequest r = BatchTestRequest("tiny-t2i", 32, 48, true, 2);
  const TinyModelSpec spec = testing::SpecOf(r);
  runtime::HeapDeviceAllocator allocator;
  auto p = DiffusionPipeline::Load(spec, allocator);
  ASSERT_TRUE(p.ok());
  const BatchTestRun one = BatchTestRunOn(**p, allocator, r);
  ASSERT_TRUE(one.status.ok()) << one.status.ToString();
  const int d = 2;
  std::vector<BatchTestRun> runs(d);
  comm::RunInProcessRanks(d, [&](comm::Communicator& world) {
    CHECK(kernels::SetBlasNumThreads(1).ok());
    world.set_op_timeout_s(kBatchTestOpTimeoutS);
    runtime::HeapDeviceAllocator own;
    auto member = DiffusionPipeline::Load(spec, own);
    CHECK(member.ok());
    const SpMember sp{&world, world.rank()};
    runs[static_cast<size_t>(world.rank())] = BatchTestRunOn(**member, own, r, &sp);
  });
  const double scale = std::max(1.0, BatchTestScale(one.output));
  for (int m = 0; m < d; ++m) {
    const BatchTestRun& run = runs[static_cast<size_t>(m)];
    ASSERT_TRUE(run.status.ok()) << "member " << m << ": " << run.status.ToString();
    EXPECT_TRUE(run.clean) << m;
  }
  EXPECT_EQ(runs[1].epilogue, std::vector<std::string>{"sp.done"});
  EXPECT_EQ(runs[0].epilogue, one.epilogue);
  EXPECT_LE(testing::MaxAbsDiff(runs[0].output, one.output), 1e-5 * scale);
}

TEST(BatchPipelineTest, BadBatchesNameTheField) {
  const DiffusionRequest good = BatchTestRequest("tiny-t2i", 32, 32, true, 2);
  const TinyModelSpec spec = testing::SpecOf(good);
  ASSERT_TRUE(ValidateRequest(spec, good).ok());
  EXPECT_EQ(RequestBatch(good), 2);
  EXPECT_EQ(KeyOf(good).batch, 2);
  EXPECT_EQ(OutputFloats(good), 2 * 3 * 32 * 32);
  struct Case {
    std::function<void(DiffusionRequest&)> mutate;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {[](DiffusionRequest& r) { r.batch_mates.assign(4, BatchMate{}); },
       "request.batch_mates: got 4 mates, must be at most 3"},
      {[](DiffusionRequest& r) { r.batch_mates[0].prompt.assign(5000, 'a'); },
       "request.batch_mates[0].prompt: got 5000 bytes"},
      {[](DiffusionRequest& r) {
         r.batch_mates.push_back(BatchMate{});
         r.batch_mates[1].guidance = NAN;
       },
       "request.batch_mates[1].guidance: got nan"},
      {[](DiffusionRequest& r) { r.batch_mates[0].guidance = -1; },
       "request.batch_mates[0].guidance: got -1"},
      {[](DiffusionRequest& r) { r.offload.latent = true; },
       "request.offload: not with a batch > 1"},
  };
  runtime::HeapDeviceAllocator allocator;
  auto p = DiffusionPipeline::Load(spec, allocator);
  ASSERT_TRUE(p.ok());
  for (const Case& c : cases) {
    DiffusionRequest r = good;
    c.mutate(r);
    const core::Status v = ValidateRequest(spec, r);
    EXPECT_EQ(v.code(), core::StatusCode::kInvalidArgument) << c.needle;
    EXPECT_NE(v.message().find(c.needle), std::string::npos) << v.ToString();
    std::vector<float> out(static_cast<size_t>(r.frames * 3 * r.height * r.width * 2));
    const core::Status s = (*p)->Run(r, out);
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << s.ToString();
  }
  // The output of one request for a batch of two.
  std::vector<float> out(static_cast<size_t>(OutputFloats(good) / 2));
  const core::Status s = (*p)->Run(good, out);
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("output: got 3072 floats, need batch * frames * 3 * height * width "
                             "= 6144"),
            std::string::npos)
      << s.ToString();
  EXPECT_FALSE(allocator.in_op());
  EXPECT_EQ(allocator.live_bytes(), (*p)->WeightBytes());
}

}  // namespace
}  // namespace tessera::xema
