#include "xema/analytic_trace.h"

#include <gtest/gtest.h>

#include "xema/pressure_intervals.h"
#include "xema/static_layout.h"

namespace tessera::xema {
namespace {

const TraceTensor& Find(const MemoryTrace& t, const std::string& name) {
  for (const TraceTensor& x : t.tensors)
    if (x.name == name) return x;
  ADD_FAILURE() << "no tensor " << name;
  return t.tensors[0];
}

TEST(AnalyticTraceTest, PublicShapes) {
  // CogVideoX-5B at 720x480x49: 13 latent frames x 30 x 45 = 17,550 video tokens + 226 text;
  // cfg doubles the batch. Unfused scores: 48 heads x 17,776^2 x 2 B = 30.3 GB per prompt.
  auto cog = AnalyticTrace({"cogvideox-5b", 720, 480, 49, 50, -1, false});
  ASSERT_TRUE(cog.ok()) << cog.status().ToString();
  EXPECT_TRUE(cog->key.cfg);
  EXPECT_EQ(Find(*cog, "dit.tokens").bytes, AlignBytes((17550 + 226) * 3072 * 2 * 2));
  EXPECT_NEAR(static_cast<double>(Find(*cog, "dit.block0.scores").bytes) / 2, 30.3e9, 0.1e9);
  // Flux.2-dev: 24B encoder + 32B DiT + 0.1B VAE in bf16 = 112.2 GB of weights.
  auto flux = AnalyticTrace({"flux2-dev", 1024, 1024, 1, 28});
  ASSERT_TRUE(flux.ok()) << flux.status().ToString();
  EXPECT_NEAR(static_cast<double>(WeightBytes(*flux)), 112.2e9, 0.01e9);
  EXPECT_EQ(flux->provenance, "modeled");
  // LTX-2 at 768x512x121: the last VAE block holds 3 x 128 channels x 2 B = 768 B per
  // pixel-frame (documented: ~750): 36.5 GB.
  auto ltx = AnalyticTrace({"ltx-2", 768, 512, 121, 40});
  ASSERT_TRUE(ltx.ok()) << ltx.status().ToString();
  const double last =
      static_cast<double>(Find(*ltx, "vae.up4.tmp").bytes + Find(*ltx, "vae.up4.out").bytes);
  EXPECT_NEAR(last / (768.0 * 512 * 121), 768, 1);
}

TEST(AnalyticTraceTest, LayoutsAndIntervalsWork) {
  for (const std::string& model : AnalyticModelNames()) {
    AnalyticRequest r{model, 512, 512, model == "flux2-dev" ? 1 : 17, 4};
    auto t = AnalyticTrace(r);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto x = Expand(*t);
    ASSERT_TRUE(x.ok());
    for (const char* algo : {"tflite", "tflm", "xla"}) {
      auto l = PlanLayout(*x, algo);
      ASSERT_TRUE(l.ok());
      EXPECT_TRUE(VerifyLayout(*t, *x, *l).ok()) << model << " " << algo;
      EXPECT_LE(static_cast<double>(l->arena_bytes), 1.05 * LowerBoundBytes(*x)) << model;
    }
    auto iv = FindPressureIntervals(*t, *x, WeightBytes(*x) + (int64_t{1} << 30));
    ASSERT_TRUE(iv.ok()) << iv.status().ToString();
  }
}

TEST(AnalyticTraceTest, ServingChoicesScaleAsModeled) {
  // CogVideoX-5B 720x480x49, cfg: 17,776 tokens; SP 4 keeps ceil(17776 / 4) = 4,444 rows.
  AnalyticRequest base{"cogvideox-5b", 720, 480, 49, 50};
  auto t1 = AnalyticTrace(base);
  ASSERT_TRUE(t1.ok());
  AnalyticRequest r = base;
  r.sp_degree = 4;
  auto t4 = AnalyticTrace(r);
  ASSERT_TRUE(t4.ok()) << t4.status().ToString();
  EXPECT_EQ(t4->key.sp_degree, 4);
  EXPECT_EQ(Find(*t4, "dit.tokens").bytes, AlignBytes(4444 * 3072 * 2 * 2));
  EXPECT_EQ(Find(*t4, "dit.block0.qkv_heads").bytes, Find(*t4, "dit.block0.qkv").bytes);
  EXPECT_EQ(WeightBytes(*t4), WeightBytes(*t1));  // replicated
  // Block time: a quarter of the work, run at a little less of the GPU (8,888 rows fill 840
  // GEMM tiles: 7 waves of 132 SMs at 91%, against 97% for 35,552 rows), plus four all-to-alls
  // of 3/4 of a local activation.
  const TraceOp& b1 = t1->body[1];
  const TraceOp& b4 = t4->body[1];
  const double x_local = 4444.0 * 3072 * 2 * 2;
  const double compute4 = b4.time_s - 4 * x_local * 0.75 / 450e9;
  EXPECT_NEAR(b4.flops, b1.flops / 4, 1);
  EXPECT_GT(compute4, b1.time_s / 4);
  EXPECT_LT(compute4, b1.time_s / 4 * 1.1);
  // A small image split 8 ways leaves most SMs idle: Flux.2 512x512 (1,536 tokens, 192 rows
  // per GPU at SP 8) runs a block at well under 8x.
  auto f1 = AnalyticTrace({"flux2-dev", 512, 512, 1, 28});
  AnalyticRequest f = {"flux2-dev", 512, 512, 1, 28};
  f.sp_degree = 8;
  auto f8 = AnalyticTrace(f);
  ASSERT_TRUE(f1.ok() && f8.ok());
  EXPECT_GT(f8->body[1].time_s, f1->body[1].time_s / 8 * 1.5);
  EXPECT_LT(RequestSeconds(*t4), RequestSeconds(*t1) / 3);
  // A block's activations: 12 local-sized tensors of 4,444 rows (q k v twice, attn, out, MLP
  // x4) against 9 of 17,776 rows: a third. (The request's peak is the VAE's, member 0's.)
  auto block_bytes = [](const MemoryTrace& t) {
    int64_t sum = 0;
    for (const TraceTensor& x : t.tensors)
      if (x.name.rfind("dit.block0.", 0) == 0 && x.kind != TensorKind::kWeight) sum += x.bytes;
    return static_cast<double>(sum);
  };
  EXPECT_NEAR(block_bytes(*t4) / block_bytes(*t1), 12.0 * 4444 / (9.0 * 17776), 1e-3);
  // FFN chunks: the MLP intermediate / k, slower (launches, GEMMs over fewer rows).
  r = base;
  r.ffn_chunks = 4;
  auto tf = AnalyticTrace(r);
  ASSERT_TRUE(tf.ok());
  EXPECT_EQ(Find(*tf, "dit.block0.mlp").bytes, AlignBytes(8888 * 12288 * 2));
  EXPECT_GT(tf->body[1].time_s - b1.time_s, 3 * 15e-6);  // launches, and smaller GEMMs
  // VAE tiles 2x2: intermediates x 1.5625 / 4, the output full size, VAE flops x 1.5625.
  r = base;
  r.vae_tiles = 2;
  auto tv = AnalyticTrace(r);
  ASSERT_TRUE(tv.ok());
  EXPECT_NEAR(static_cast<double>(Find(*tv, "vae.up0.out").bytes),
              Find(*t1, "vae.up0.out").bytes * 1.5625 / 4, 512);
  EXPECT_EQ(Find(*tv, "vae.up3.out").bytes, Find(*t1, "vae.up3.out").bytes);
  EXPECT_NEAR(tv->epilogue[0].flops, t1->epilogue[0].flops * 1.5625, 1);
  // Encoder on host: its 9.4 GB leave the weights; two streamed layers at most are live.
  r = base;
  r.encoder_on_host = true;
  auto th = AnalyticTrace(r);
  ASSERT_TRUE(th.ok());
  EXPECT_NEAR(static_cast<double>(WeightBytes(*t1) - WeightBytes(*th)), 9.4e9, 0.01e9);
  const double layer_s = 4.7e9 / 24 * 2 / 55e9;
  EXPECT_NEAR(th->prologue[1].time_s, std::max(t1->prologue[1].time_s, layer_s), 1e-12);
  EXPECT_NEAR(th->prologue[0].time_s, t1->prologue[0].time_s + layer_s, 1e-12);
  r = base;
  r.sp_degree = 5;
  auto bad = AnalyticTrace(r);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sp_degree: got 5, must be in [1, 64] and divide the 48"),
            std::string::npos)
      << bad.status().message();
  EXPECT_EQ(FindAnalyticModel("ltx-2")->heads, 32);
  EXPECT_FALSE(FindAnalyticModel("flux2-dev")->default_cfg);
  EXPECT_TRUE(FindAnalyticModel("cogvideox-5b")->video);
  EXPECT_FALSE(FindAnalyticModel("sdxl").ok());
}

TEST(AnalyticTraceTest, ABatchFillsTheGpuAndDecodesEachRequest) {
  // Flux.2 512x512 at SP 8: 192 rows per GPU fill 48 GEMM tiles of 132 SMs (36%); four requests
  // in one pass (768 rows, 144 tiles: two waves at 55%) run a block in about 2.7x one's time for
  // 4x the work. The text encoder runs four prompts (no cfg), the VAE decodes the four in turn.
  AnalyticRequest one = {"flux2-dev", 512, 512, 1, 28};
  one.sp_degree = 8;
  AnalyticRequest four = one;
  four.batch = 4;
  auto t1 = AnalyticTrace(one);
  auto t4 = AnalyticTrace(four);
  ASSERT_TRUE(t1.ok() && t4.ok()) << t4.status().ToString();
  EXPECT_EQ(t4->key.batch, 4);
  EXPECT_NEAR(t4->body[1].flops, 4 * t1->body[1].flops, 1e-6 * t4->body[1].flops);
  EXPECT_GT(t4->body[1].time_s, 2.5 * t1->body[1].time_s);
  EXPECT_LT(t4->body[1].time_s, 3 * t1->body[1].time_s);
  EXPECT_NEAR(t4->prologue[0].flops, 4 * t1->prologue[0].flops, 1);
  ASSERT_EQ(t4->epilogue.size(), 4 * t1->epilogue.size());
  EXPECT_EQ(t4->epilogue[t1->epilogue.size()].name, "vae1.up0");
  EXPECT_EQ(Find(*t4, "vae3.up3.out").bytes, Find(*t1, "vae.up3.out").bytes);
  EXPECT_EQ(Find(*t4, "dit.tokens").bytes, AlignBytes(4 * 192 * 6144 * 2));
  EXPECT_EQ(Find(*t4, "latent.next").bytes, AlignBytes(4 * 32 * 64 * 64 * 2));
  EXPECT_LT(RequestSeconds(*t4), 4 * RequestSeconds(*t1));
  EXPECT_EQ(WeightBytes(*t4), WeightBytes(*t1));
  // CogVideoX (cfg): 2 prompts and the negative once; sequences 2 x 2.
  AnalyticRequest cog{"cogvideox-5b", 720, 480, 49, 50};
  cog.batch = 2;
  auto c2 = AnalyticTrace(cog);
  auto c1 = AnalyticTrace({"cogvideox-5b", 720, 480, 49, 50});
  ASSERT_TRUE(c1.ok() && c2.ok());
  EXPECT_NEAR(c2->prologue[0].flops, 1.5 * c1->prologue[0].flops, 1);
  EXPECT_NEAR(c2->body[1].flops, 2 * c1->body[1].flops, 1e-6 * c2->body[1].flops);
  four.batch = 0;
  auto bad = AnalyticTrace(four);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("batch: got 0, must be in [1, 64]"), std::string::npos)
      << bad.status().message();
}

TEST(AnalyticTraceTest, BadRequests) {
  auto r = AnalyticTrace({"sdxl", 1024, 1024, 1, 28});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "analytic: got 'sdxl', must be one of flux2-dev, cogvideox-5b, ltx-2");
  r = AnalyticTrace({"flux2-dev", 1000, 1024, 1, 28});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("size: got 1000x1024, each side must be a multiple of 16"),
            std::string::npos);
  r = AnalyticTrace({"flux2-dev", 1024, 1024, 5, 28});
  EXPECT_NE(r.status().message().find("frames: got 5, must be 1"), std::string::npos);
  r = AnalyticTrace({"cogvideox-5b", 720, 480, 48, 50});
  EXPECT_NE(r.status().message().find("frames: got 48, must be 4k+1"), std::string::npos);
  r = AnalyticTrace({"ltx-2", 16384, 16384, 1025, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must be <= 1 TiB"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(ParseImageSize("1024").ok());
  EXPECT_FALSE(ParseImageSize("8x1024").ok());
  EXPECT_EQ(*ParseImageSize("1280x720"), std::make_pair(int64_t{1280}, int64_t{720}));
  // Digits only: signs, spaces and junk are refused, not read as 1024x1024.
  for (const char* bad : {"+1024x+1024", "+1024x1024", "1024x+1024", " 1024x1024", "1024x1024 ",
                          "1024x1024x", "-0x1024", "0x1024", "99999999999999999999x1024"}) {
    EXPECT_FALSE(ParseImageSize(bad).ok()) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace tessera::xema
