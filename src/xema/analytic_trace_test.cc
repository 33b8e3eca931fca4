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

int64_t Weights(const MemoryTrace& t) {
  int64_t w = 0;
  for (const TraceTensor& x : t.tensors)
    if (x.kind == TensorKind::kWeight) w += x.bytes;
  return w;
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
  EXPECT_NEAR(static_cast<double>(Weights(*flux)), 112.2e9, 0.01e9);
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
}

}  // namespace
}  // namespace tessera::xema
