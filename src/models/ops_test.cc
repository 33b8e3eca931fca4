#include "models/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "models/models_test_util.h"

namespace tessera::models::ops {
namespace {

using testing::MaxRelErr;
using testing::NumericalGrad;
using testing::RandomNormal;

constexpr float kEps = 1e-2f;
constexpr double kTol = 1e-2;

const std::vector<int64_t> kCu = {0, 3, 4, 9};  // three sequences, 9 tokens

TEST(OpsTest, LinearForwardMatchesNaiveLoops) {
  core::Rng rng(11);
  const int64_t n = 7, in = 5, out = 6, ldw = 9;  // a column slice of a wider weight
  auto x = RandomNormal(rng, n * in);
  auto w = RandomNormal(rng, in * ldw);
  auto b = RandomNormal(rng, out);
  std::vector<float> y(n * out);
  LinearForward(x.data(), n, in, w.data(), ldw, b.data(), out, y.data(), out);
  std::vector<double> ref(n * out);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < out; ++j) {
      double s = b[j];
      for (int64_t i = 0; i < in; ++i) s += static_cast<double>(x[r * in + i]) * w[i * ldw + j];
      ref[r * out + j] = s;
    }
  }
  EXPECT_LT(MaxRelErr(y, ref), 1e-5);
}

TEST(OpsTest, LinearBackwardMatchesFiniteDifferences) {
  core::Rng rng(12);
  const int64_t n = 6, in = 4, out = 5;
  auto x = RandomNormal(rng, n * in);
  auto w = RandomNormal(rng, in * out);
  auto b = RandomNormal(rng, out);
  auto probe = RandomNormal(rng, n * out);
  auto fwd = [&](const std::vector<float>& xx, const std::vector<float>& ww,
                 const std::vector<float>& bb) {
    std::vector<float> y(n * out);
    LinearForward(xx.data(), n, in, ww.data(), out, bb.data(), out, y.data(), out);
    return y;
  };
  std::vector<float> dw(in * out, 0.0f), db(out, 0.0f), dx(n * in, 5.0f);
  LinearBackward(x.data(), n, in, w.data(), out, out, probe.data(), out, dw.data(), db.data(),
                 dx.data(), false);
  auto ndx = NumericalGrad([&](const auto& v) { return fwd(v, w, b); }, x, probe, kEps);
  auto ndw = NumericalGrad([&](const auto& v) { return fwd(x, v, b); }, w, probe, kEps);
  auto ndb = NumericalGrad([&](const auto& v) { return fwd(x, w, v); }, b, probe, kEps);
  EXPECT_LT(MaxRelErr(dx, ndx), kTol);
  EXPECT_LT(MaxRelErr(dw, ndw), kTol);
  EXPECT_LT(MaxRelErr(db, ndb), kTol);
  // Accumulation adds to what is there.
  std::vector<float> dx2(n * in, 1.0f), dw2(in * out, 0.0f), db2(out, 0.0f);
  LinearBackward(x.data(), n, in, w.data(), out, out, probe.data(), out, dw2.data(), db2.data(),
                 dx2.data(), true);
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_FLOAT_EQ(dx2[i], dx[i] + 1.0f);
}

TEST(OpsTest, LayerNormNormalisesAndBackwardMatchesFiniteDifferences) {
  core::Rng rng(13);
  const int64_t n = 5, width = 16;
  auto x = RandomNormal(rng, n * width, 2.0);
  for (int64_t i = 0; i < n * width; ++i) x[i] += 3.0f;  // non-zero mean
  auto probe = RandomNormal(rng, n * width);
  std::vector<float> y(n * width), rstd(n);
  LayerNormForward(x.data(), n, width, 1e-6f, y.data(), rstd.data());
  for (int64_t r = 0; r < n; ++r) {
    double mean = 0, sq = 0;
    for (int64_t j = 0; j < width; ++j) mean += y[r * width + j];
    for (int64_t j = 0; j < width; ++j) sq += y[r * width + j] * y[r * width + j];
    EXPECT_NEAR(mean / width, 0.0, 1e-5);
    EXPECT_NEAR(sq / width, 1.0, 1e-4);
  }
  std::vector<float> dx(n * width);
  LayerNormBackward(probe.data(), y.data(), rstd.data(), n, width, dx.data(), false);
  auto ndx = NumericalGrad(
      [&](const std::vector<float>& v) {
        std::vector<float> yy(n * width), rr(n);
        LayerNormForward(v.data(), n, width, 1e-6f, yy.data(), rr.data());
        return yy;
      },
      x, probe, kEps);
  EXPECT_LT(MaxRelErr(dx, ndx), kTol);
}

TEST(OpsTest, ModulateBackwardMatchesFiniteDifferences) {
  core::Rng rng(14);
  const int64_t width = 4, s_n = 3, ld = 3 * width;  // shift/scale live in a wider row
  const int64_t t_n = kCu.back();
  auto x = RandomNormal(rng, t_n * width);
  auto mod = RandomNormal(rng, s_n * ld, 0.5);
  auto probe = RandomNormal(rng, t_n * width);
  auto fwd = [&](const std::vector<float>& xx, const std::vector<float>& mm) {
    std::vector<float> y(t_n * width);
    ModulateForward(xx.data(), kCu, width, mm.data() + width, mm.data() + 2 * width, ld, y.data());
    return y;
  };
  std::vector<float> dx(t_n * width), dmod(s_n * ld, 0.0f);
  ModulateBackward(probe.data(), x.data(), kCu, width, mod.data() + 2 * width, ld, dx.data(),
                   dmod.data() + width, dmod.data() + 2 * width);
  EXPECT_LT(
      MaxRelErr(dx, NumericalGrad([&](const auto& v) { return fwd(v, mod); }, x, probe, kEps)),
      kTol);
  // The gradient also covers the untouched first chunk (must stay 0).
  EXPECT_LT(
      MaxRelErr(dmod, NumericalGrad([&](const auto& v) { return fwd(x, v); }, mod, probe, kEps)),
      kTol);
}

TEST(OpsTest, GatedResidualBackwardMatchesFiniteDifferences) {
  core::Rng rng(15);
  const int64_t width = 4, s_n = 3, ld = 2 * width;
  const int64_t t_n = kCu.back();
  auto y = RandomNormal(rng, t_n * width);
  auto h0 = RandomNormal(rng, t_n * width);
  auto mod = RandomNormal(rng, s_n * ld);
  auto probe = RandomNormal(rng, t_n * width);
  auto fwd = [&](const std::vector<float>& yy, const std::vector<float>& mm) {
    std::vector<float> h = h0;
    GatedResidualForward(yy.data(), kCu, width, mm.data() + width, ld, h.data());
    return h;
  };
  std::vector<float> dy(t_n * width), dmod(s_n * ld, 0.0f);
  GatedResidualBackward(probe.data(), y.data(), kCu, width, mod.data() + width, ld, dy.data(),
                        dmod.data() + width);
  EXPECT_LT(
      MaxRelErr(dy, NumericalGrad([&](const auto& v) { return fwd(v, mod); }, y, probe, kEps)),
      kTol);
  EXPECT_LT(
      MaxRelErr(dmod, NumericalGrad([&](const auto& v) { return fwd(y, v); }, mod, probe, kEps)),
      kTol);
}

TEST(OpsTest, GeluAndSiluBackwardMatchFiniteDifferences) {
  core::Rng rng(16);
  const int64_t n = 64;
  auto x = RandomNormal(rng, n, 2.0);
  auto probe = RandomNormal(rng, n);
  std::vector<float> y(n), dx(n);
  GeluForward(x.data(), n, y.data());
  // Known values: gelu(0) = 0, gelu(large) ~ x, gelu(-large) ~ 0.
  const float probes[3] = {0.0f, 6.0f, -6.0f};
  float gp[3];
  GeluForward(probes, 3, gp);
  EXPECT_FLOAT_EQ(gp[0], 0.0f);
  EXPECT_NEAR(gp[1], 6.0f, 1e-5);
  EXPECT_NEAR(gp[2], 0.0f, 1e-5);
  GeluBackward(probe.data(), x.data(), n, dx.data());
  auto gelu = [&](const std::vector<float>& v) {
    std::vector<float> out(v.size());
    GeluForward(v.data(), static_cast<int64_t>(v.size()), out.data());
    return out;
  };
  EXPECT_LT(MaxRelErr(dx, NumericalGrad(gelu, x, probe, 1e-3f)), kTol);
  auto silu = [&](const std::vector<float>& v) {
    std::vector<float> out(v.size());
    SiluForward(v.data(), static_cast<int64_t>(v.size()), out.data());
    return out;
  };
  SiluBackward(probe.data(), x.data(), n, dx.data(), false);
  EXPECT_LT(MaxRelErr(dx, NumericalGrad(silu, x, probe, 1e-3f)), kTol);
  float one = 1.0f, s1;
  SiluForward(&one, 1, &s1);
  EXPECT_NEAR(s1, 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
}

TEST(OpsTest, GeluAndSiluMatchDoublePrecisionFormulas) {
  std::vector<float> x;
  for (int i = -2000; i <= 2000; ++i) x.push_back(0.01f * static_cast<float>(i));
  x.push_back(-100.0f);
  x.push_back(100.0f);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> gelu(n), silu(n);
  GeluForward(x.data(), n, gelu.data());
  SiluForward(x.data(), n, silu.data());
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double g = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    const double s = v / (1.0 + std::exp(-v));
    const double tol = 1e-6 * std::max(1.0, std::abs(v));
    EXPECT_NEAR(gelu[i], g, tol) << "gelu(" << v << ")";
    EXPECT_NEAR(silu[i], s, tol) << "silu(" << v << ")";
  }
}

TEST(OpsTest, PositionEmbeddingRestartsPerSequence) {
  const int64_t width = 6;
  std::vector<float> h(kCu.back() * width, 1.0f);
  const std::vector<int64_t> offsets = {0, 7, 2};
  AddPositionEmbedding(kCu, offsets, width, h.data());
  std::vector<float> emb(width);
  for (size_t s = 0; s + 1 < kCu.size(); ++s) {
    for (int64_t t = kCu[s]; t < kCu[s + 1]; ++t) {
      const float p = static_cast<float>(offsets[s] + t - kCu[s]);
      SinusoidalEmbedding(&p, 1, width, 10000.0f, emb.data());
      for (int64_t j = 0; j < width; ++j) EXPECT_FLOAT_EQ(h[t * width + j], 1.0f + emb[j]);
    }
  }
}

TEST(OpsTest, SinusoidalEmbeddingValues) {
  const float v[2] = {0.0f, 2.0f};
  std::vector<float> out(2 * 4);
  SinusoidalEmbedding(v, 2, 4, 10000.0f, out.data());
  // Row 0: cos(0) = 1, sin(0) = 0. Row 1: freqs 1 and 1/100.
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[2], 0.0f);
  EXPECT_NEAR(out[4], std::cos(2.0), 1e-6);
  EXPECT_NEAR(out[5], std::cos(0.02), 1e-6);
  EXPECT_NEAR(out[6], std::sin(2.0), 1e-6);
  EXPECT_NEAR(out[7], std::sin(0.02), 1e-6);
}

}  // namespace
}  // namespace tessera::models::ops
