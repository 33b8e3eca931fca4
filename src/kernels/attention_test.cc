#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/infinity.h"
#include "core/rng.h"
#include "kernels/attention_reference.h"
#include "kernels/gemm.h"
#include "kernels/kernels_test_util.h"

namespace tessera::kernels {
namespace {

using testing::AvailableBackends;
using testing::CumSum;
using testing::MaxRelErr;
using testing::MaxRelErrLse;
using testing::RandomNormal;
using testing::ScopedGemmBackend;
using testing::SplitTokens;

using core::kNegInf;

// A packed varlen problem with seeded random Q, K, V and upstream gradient dO.
struct Problem {
  int64_t h = 0, d = 0;
  std::vector<int64_t> cu_q, cu_k;
  std::vector<float> q, k, v, d_o;

  AttentionShape Shape(bool causal = false) const {
    return {h, d, cu_q, cu_k, std::nullopt, causal};
  }
  int64_t QElems() const { return cu_q.back() * h * d; }
  int64_t KElems() const { return cu_k.back() * h * d; }
};

Problem MakeProblem(uint64_t seed, int64_t h, int64_t d, const std::vector<int64_t>& lens_q,
                    const std::vector<int64_t>& lens_k) {
  core::Rng rng(seed);
  Problem p;
  p.h = h;
  p.d = d;
  p.cu_q = CumSum(lens_q);
  p.cu_k = CumSum(lens_k);
  p.q = RandomNormal(rng, p.QElems());
  p.k = RandomNormal(rng, p.KElems());
  p.v = RandomNormal(rng, p.KElems());
  p.d_o = RandomNormal(rng, p.QElems());
  return p;
}

struct Config {
  std::string name;
  int64_t h, d;
  std::vector<int64_t> lens_q, lens_k;
};

// Lengths not multiples of the tiles, length 1, Tq != Tk, empty query or key sides,
// D = 64 and 128 and a generic D, H = 1..4.
std::vector<Config> Configs() {
  return {
      {"single_token", 1, 64, {1}, {1}},
      {"varlen_d64", 2, 64, {130, 1, 77}, {130, 5, 300}},
      {"empty_sides_d128", 3, 128, {200, 0, 64}, {129, 17, 0}},
      {"tq_ne_tk_d128", 4, 128, {33, 250}, {700, 90}},
      {"generic_d40", 1, 40, {50, 3}, {77, 1}},
      {"long_d64", 2, 64, {600}, {600}},
  };
}

std::vector<AttentionTiling> Tilings() { return {{}, {32, 64}, {7, 13}}; }

// Causal (bottom-right aligned): varlen sequences of different lengths, queries fewer than keys
// per sequence, length-1 sequences, queries with 0 tokens against keys, lengths the tiles
// neither equal nor divide.
std::vector<Config> CausalConfigs() {
  return {
      {"causal_single_token", 1, 64, {1}, {1}},
      {"causal_varlen_d64", 2, 64, {1, 37, 100}, {1, 37, 100}},
      {"causal_lq_lt_lk_d128", 3, 128, {20, 1, 64, 0, 50}, {50, 9, 64, 7, 300}},
      {"causal_generic_d40", 1, 40, {130, 1, 3}, {130, 1, 3}},
      {"causal_long_d64", 2, 64, {600, 260}, {600, 700}},
  };
}

// Tiles smaller than and not dividing the lengths, taller than wide (rows wholly masked in a key
// tile after key tile 0) and wider than tall, and the defaults (one key tile per query tile).
std::vector<AttentionTiling> CausalTilings() { return {{}, {16, 24}, {24, 16}, {7, 13}, {64, 64}}; }

// The tiled forward against the reference for every config, tiling and GEMM backend.
void ExpectForwardMatchesReference(const std::vector<Config>& configs,
                                   const std::vector<AttentionTiling>& tilings, bool causal,
                                   uint64_t seed) {
  for (const Config& c : configs) {
    const Problem p = MakeProblem(seed, c.h, c.d, c.lens_q, c.lens_k);
    const AttentionShape shape = p.Shape(causal);
    std::vector<float> o_ref(p.QElems()), lse_ref(p.cu_q.back() * p.h);
    ASSERT_TRUE(AttentionForwardReference<float>(shape, p.q.data(), p.k.data(), p.v.data(),
                                                 o_ref.data(), lse_ref.data())
                    .ok());
    for (GemmBackend backend : AvailableBackends()) {
      ScopedGemmBackend scoped(backend);
      for (const AttentionTiling& t : tilings) {
        std::vector<float> o(p.QElems(), NAN), lse(p.cu_q.back() * p.h, NAN);
        ASSERT_TRUE(
            AttentionForward(shape, p.q.data(), p.k.data(), p.v.data(), o.data(), lse.data(), t)
                .ok());
        const std::string where = c.name + " tiles " + std::to_string(t.block_q) + "x" +
                                  std::to_string(t.block_k) + " " + GemmBackendName(backend);
        EXPECT_LT(MaxRelErr(o, o_ref), 1e-5) << where;
        EXPECT_LT(MaxRelErrLse(lse, lse_ref), 1e-6) << where;
      }
    }
  }
}

// The tiled backward against the reference (from the reference forward's o and lse).
void ExpectBackwardMatchesReference(const std::vector<Config>& configs,
                                    const std::vector<AttentionTiling>& tilings, bool causal,
                                    uint64_t seed) {
  for (const Config& c : configs) {
    const Problem p = MakeProblem(seed, c.h, c.d, c.lens_q, c.lens_k);
    const AttentionShape shape = p.Shape(causal);
    std::vector<float> o(p.QElems()), lse(p.cu_q.back() * p.h);
    ASSERT_TRUE(AttentionForwardReference<float>(shape, p.q.data(), p.k.data(), p.v.data(),
                                                 o.data(), lse.data())
                    .ok());
    std::vector<float> dq_ref(p.QElems()), dk_ref(p.KElems()), dv_ref(p.KElems());
    ASSERT_TRUE(AttentionBackwardReference<float>(shape, p.q.data(), p.k.data(), p.v.data(),
                                                  o.data(), p.d_o.data(), lse.data(), dq_ref.data(),
                                                  dk_ref.data(), dv_ref.data())
                    .ok());
    for (GemmBackend backend : AvailableBackends()) {
      ScopedGemmBackend scoped(backend);
      for (const AttentionTiling& t : tilings) {
        std::vector<float> dq(p.QElems(), NAN), dk(p.KElems(), NAN), dv(p.KElems(), NAN);
        AttentionBackwardOptions opts;
        opts.tiling = t;
        ASSERT_TRUE(AttentionBackward(shape, p.q.data(), p.k.data(), p.v.data(), o.data(),
                                      p.d_o.data(), lse.data(), dq.data(), dk.data(), dv.data(),
                                      opts)
                        .ok());
        const std::string where = c.name + " tiles " + std::to_string(t.block_q) + "x" +
                                  std::to_string(t.block_k) + " " + GemmBackendName(backend);
        EXPECT_LT(MaxRelErr(dq, dq_ref), 1e-5) << where;
        EXPECT_LT(MaxRelErr(dk, dk_ref), 1e-5) << where;
        EXPECT_LT(MaxRelErr(dv, dv_ref), 1e-5) << where;
      }
    }
  }
}

TEST(KernelsAttentionTest, ForwardMatchesReference) {
  ExpectForwardMatchesReference(Configs(), Tilings(), /*causal=*/false, 11);
}

TEST(KernelsAttentionTest, BackwardMatchesReference) {
  ExpectBackwardMatchesReference(Configs(), Tilings(), /*causal=*/false, 21);
}

TEST(KernelsAttentionTest, CausalForwardMatchesReference) {
  ExpectForwardMatchesReference(CausalConfigs(), CausalTilings(), /*causal=*/true, 14);
}

TEST(KernelsAttentionTest, CausalBackwardMatchesReference) {
  ExpectBackwardMatchesReference(CausalConfigs(), CausalTilings(), /*causal=*/true, 24);
}

TEST(KernelsAttentionTest, ForwardRowsWithoutKeysAreZeroWithNegInfLse) {
  const Problem p = MakeProblem(12, 2, 64, {3, 2}, {0, 4});
  std::vector<float> o(p.QElems(), NAN), lse(p.cu_q.back() * p.h, NAN);
  ASSERT_TRUE(
      AttentionForward(p.Shape(), p.q.data(), p.k.data(), p.v.data(), o.data(), lse.data()).ok());
  for (int64_t i = 0; i < 3 * p.h * p.d; ++i) EXPECT_EQ(o[i], 0.0f);
  for (int64_t i = 0; i < 3 * p.h; ++i) EXPECT_EQ(lse[i], kNegInf);
  for (int64_t i = 3 * p.h; i < 5 * p.h; ++i) EXPECT_TRUE(std::isfinite(lse[i]));
}

TEST(KernelsAttentionTest, CustomScaleMatchesReference) {
  Problem p = MakeProblem(13, 2, 128, {65, 9}, {40, 130});
  AttentionShape shape = p.Shape();
  shape.scale = 0.3f;
  std::vector<float> o(p.QElems()), lse(p.cu_q.back() * p.h), o_ref(o), lse_ref(lse);
  ASSERT_TRUE(
      AttentionForward(shape, p.q.data(), p.k.data(), p.v.data(), o.data(), lse.data(), {16, 32})
          .ok());
  ASSERT_TRUE(AttentionForwardReference<float>(shape, p.q.data(), p.k.data(), p.v.data(),
                                               o_ref.data(), lse_ref.data())
                  .ok());
  EXPECT_LT(MaxRelErr(o, o_ref), 1e-5);
  EXPECT_LT(MaxRelErrLse(lse, lse_ref), 1e-6);
}

// Causal row i depends on keys 0..i only. (1) Prefix: the first p rows of a causal forward of
// n tokens equal a causal forward of the sequence truncated to p tokens. (2) Zero weight: giving
// tokens p.. other, large K and V (scores that would dominate, values that would show any leaked
// weight) leaves the forward's first p rows of O and LSE, and the backward's first p rows of dQ,
// bit-identical: masked keys get exactly zero weight, also in key tiles where a row sees no key.
TEST(KernelsAttentionTest, CausalRowsDependOnlyOnEarlierKeys) {
  const int64_t n = 100;
  const Problem p = MakeProblem(62, 2, 64, {n}, {n});
  const int64_t row = p.h * p.d;
  const AttentionShape shape = p.Shape(/*causal=*/true);
  for (GemmBackend backend : AvailableBackends()) {
    ScopedGemmBackend scoped(backend);
    for (const AttentionTiling& t : CausalTilings()) {
      std::vector<float> o(p.QElems()), lse(n * p.h);
      ASSERT_TRUE(
          AttentionForward(shape, p.q.data(), p.k.data(), p.v.data(), o.data(), lse.data(), t)
              .ok());
      AttentionBackwardOptions opts;
      opts.tiling = t;
      std::vector<float> dq(p.QElems()), dk(p.KElems()), dv(p.KElems());
      ASSERT_TRUE(AttentionBackward(shape, p.q.data(), p.k.data(), p.v.data(), o.data(),
                                    p.d_o.data(), lse.data(), dq.data(), dk.data(), dv.data(), opts)
                      .ok());
      for (int64_t len : {1, 16, 37, 99}) {
        const std::string where = "prefix " + std::to_string(len) + " tiles " +
                                  std::to_string(t.block_q) + "x" + std::to_string(t.block_k) +
                                  " " + GemmBackendName(backend);
        // (1) Truncated sequence: its packed tensors are the first len tokens of the full ones.
        const std::vector<int64_t> cu = {0, len};
        const AttentionShape prefix{p.h, p.d, cu, cu, std::nullopt, /*causal=*/true};
        std::vector<float> o_p(len * row, NAN), lse_p(len * p.h, NAN);
        ASSERT_TRUE(AttentionForward(prefix, p.q.data(), p.k.data(), p.v.data(), o_p.data(),
                                     lse_p.data(), t)
                        .ok());
        EXPECT_LT(MaxRelErr(o_p, std::vector<float>(o.begin(), o.begin() + len * row)), 1e-6)
            << where;
        EXPECT_LT(MaxRelErrLse(lse_p, std::vector<float>(lse.begin(), lse.begin() + len * p.h)),
                  1e-6)
            << where;
        // (2) Later tokens replaced by large ones: the first len rows do not change at all.
        core::Rng rng(63 + len);
        std::vector<float> k2 = p.k, v2 = p.v;
        const std::vector<float> k_late = RandomNormal(rng, (n - len) * row, 10.0),
                                 v_late = RandomNormal(rng, (n - len) * row, 1e3);
        std::copy(k_late.begin(), k_late.end(), k2.begin() + len * row);
        std::copy(v_late.begin(), v_late.end(), v2.begin() + len * row);
        std::vector<float> o2(p.QElems()), lse2(n * p.h);
        ASSERT_TRUE(
            AttentionForward(shape, p.q.data(), k2.data(), v2.data(), o2.data(), lse2.data(), t)
                .ok());
        std::vector<float> dq2(p.QElems()), dk2(p.KElems()), dv2(p.KElems());
        ASSERT_TRUE(AttentionBackward(shape, p.q.data(), k2.data(), v2.data(), o2.data(),
                                      p.d_o.data(), lse2.data(), dq2.data(), dk2.data(), dv2.data(),
                                      opts)
                        .ok());
        int64_t changed = 0;
        for (int64_t i = 0; i < len * row; ++i) changed += (o2[i] != o[i]) + (dq2[i] != dq[i]);
        for (int64_t i = 0; i < len * p.h; ++i) changed += lse2[i] != lse[i];
        EXPECT_EQ(changed, 0) << where;
      }
    }
  }
}

// Bottom-right alignment: lq queries against lk keys are the LAST lq positions of an lk-token
// causal sequence, so their O and LSE equal the last lq rows of the square causal call (tiled
// kernels and reference alike).
TEST(KernelsAttentionTest, CausalFewerQueriesAreTheLastRowsOfTheSquareCall) {
  const int64_t n = 100;
  const Problem p = MakeProblem(64, 2, 64, {n}, {n});
  const int64_t row = p.h * p.d;
  const AttentionShape square = p.Shape(/*causal=*/true);
  std::vector<float> o_ref(p.QElems()), lse_ref(n * p.h);
  ASSERT_TRUE(AttentionForwardReference<float>(square, p.q.data(), p.k.data(), p.v.data(),
                                               o_ref.data(), lse_ref.data())
                  .ok());
  for (const AttentionTiling& t : CausalTilings()) {
    std::vector<float> o(p.QElems()), lse(n * p.h);
    ASSERT_TRUE(
        AttentionForward(square, p.q.data(), p.k.data(), p.v.data(), o.data(), lse.data(), t).ok());
    for (int64_t lq : {1, 30, 99}) {
      const std::string where = "lq " + std::to_string(lq) + " tiles " + std::to_string(t.block_q) +
                                "x" + std::to_string(t.block_k);
      const std::vector<int64_t> cu_q = {0, lq}, cu_k = {0, n};
      const AttentionShape last{p.h, p.d, cu_q, cu_k, std::nullopt, /*causal=*/true};
      const float* q_last = p.q.data() + (n - lq) * row;
      std::vector<float> o_l(lq * row, NAN), lse_l(lq * p.h, NAN), o_lr(o_l), lse_lr(lse_l);
      ASSERT_TRUE(
          AttentionForward(last, q_last, p.k.data(), p.v.data(), o_l.data(), lse_l.data(), t).ok());
      ASSERT_TRUE(AttentionForwardReference<float>(last, q_last, p.k.data(), p.v.data(),
                                                   o_lr.data(), lse_lr.data())
                      .ok());
      const std::vector<float> o_want(o.end() - lq * row, o.end()),
          lse_want(lse.end() - lq * p.h, lse.end()),
          o_ref_want(o_ref.end() - lq * row, o_ref.end()),
          lse_ref_want(lse_ref.end() - lq * p.h, lse_ref.end());
      EXPECT_LT(MaxRelErr(o_l, o_want), 1e-6) << where;
      EXPECT_LT(MaxRelErrLse(lse_l, lse_want), 1e-6) << where;
      EXPECT_LT(MaxRelErr(o_lr, o_ref_want), 1e-6) << where;
      EXPECT_LT(MaxRelErrLse(lse_lr, lse_ref_want), 1e-6) << where;
    }
  }
}

// Many short sequences (every length 1..tile, shuffled) mixed with long ones, as a coalescing
// engine hands them to one call: forward (O, LSE) and backward against the reference, and the
// one varlen call against one call per sequence.
TEST(KernelsAttentionTest, ManyShortAndMixedSequencesMatchReferenceAndPerSequenceCalls) {
  for (const AttentionTiling& t : {AttentionTiling{}, AttentionTiling{32, 64}}) {
    core::Rng rng(31 + t.block_q);
    std::vector<int64_t> lens;
    for (int64_t l = 1; l <= t.block_q; ++l) lens.push_back(l);
    for (size_t i = lens.size(); i > 1; --i) std::swap(lens[i - 1], lens[rng.Below(i)]);
    lens.insert(lens.begin() + static_cast<int64_t>(lens.size() / 2), t.block_k + 37);
    lens.push_back(3 * t.block_q + 5);
    const Problem p = MakeProblem(41, 2, 64, lens, lens);
    const AttentionShape shape = p.Shape();
    const std::string where = "tiles " + std::to_string(t.block_q) + "x" +
                              std::to_string(t.block_k) + ", " + std::to_string(lens.size()) +
                              " sequences";
    std::vector<float> o_ref(p.QElems()), lse_ref(p.cu_q.back() * p.h);
    ASSERT_TRUE(AttentionForwardReference<float>(shape, p.q.data(), p.k.data(), p.v.data(),
                                                 o_ref.data(), lse_ref.data())
                    .ok());
    std::vector<float> dq_ref(p.QElems()), dk_ref(p.KElems()), dv_ref(p.KElems());
    ASSERT_TRUE(AttentionBackwardReference<float>(shape, p.q.data(), p.k.data(), p.v.data(),
                                                  o_ref.data(), p.d_o.data(), lse_ref.data(),
                                                  dq_ref.data(), dk_ref.data(), dv_ref.data())
                    .ok());
    // One varlen call (outputs start as NaN: every row must be written).
    std::vector<float> o(p.QElems(), NAN), lse(lse_ref.size(), NAN);
    std::vector<float> dq(p.QElems(), NAN), dk(p.KElems(), NAN), dv(p.KElems(), NAN);
    ASSERT_TRUE(
        AttentionForward(shape, p.q.data(), p.k.data(), p.v.data(), o.data(), lse.data(), t).ok());
    AttentionBackwardOptions opts;
    opts.tiling = t;
    ASSERT_TRUE(AttentionBackward(shape, p.q.data(), p.k.data(), p.v.data(), o_ref.data(),
                                  p.d_o.data(), lse_ref.data(), dq.data(), dk.data(), dv.data(),
                                  opts)
                    .ok());
    auto all_finite = [](const std::vector<float>& x) {
      for (float e : x)
        if (!std::isfinite(e)) return false;
      return true;
    };
    for (const std::vector<float>* x : {&o, &lse, &dq, &dk, &dv}) EXPECT_TRUE(all_finite(*x));
    EXPECT_LT(MaxRelErr(o, o_ref), 1e-5) << where;
    EXPECT_LT(MaxRelErrLse(lse, lse_ref), 1e-6) << where;
    EXPECT_LT(MaxRelErr(dq, dq_ref), 1e-5) << where;
    EXPECT_LT(MaxRelErr(dk, dk_ref), 1e-5) << where;
    EXPECT_LT(MaxRelErr(dv, dv_ref), 1e-5) << where;
    // One call per sequence on the same packed buffers.
    std::vector<float> o1(p.QElems(), NAN), lse1(lse_ref.size(), NAN);
    std::vector<float> dq1(p.QElems(), NAN), dk1(p.KElems(), NAN), dv1(p.KElems(), NAN);
    const int64_t row = p.h * p.d;
    for (size_t i = 0; i < lens.size(); ++i) {
      const int64_t cu[2] = {0, lens[i]};
      const AttentionShape one{p.h, p.d, cu, cu, std::nullopt};
      const int64_t off = p.cu_q[i] * row;
      ASSERT_TRUE(AttentionForward(one, p.q.data() + off, p.k.data() + off, p.v.data() + off,
                                   o1.data() + off, lse1.data() + p.cu_q[i] * p.h, t)
                      .ok());
      ASSERT_TRUE(AttentionBackward(one, p.q.data() + off, p.k.data() + off, p.v.data() + off,
                                    o_ref.data() + off, p.d_o.data() + off,
                                    lse_ref.data() + p.cu_q[i] * p.h, dq1.data() + off,
                                    dk1.data() + off, dv1.data() + off, opts)
                      .ok());
    }
    for (const std::vector<float>* x : {&o1, &lse1, &dq1, &dk1, &dv1}) {
      EXPECT_TRUE(all_finite(*x));
    }
    EXPECT_LT(MaxRelErr(o1, o), 1e-6) << where;
    EXPECT_LT(MaxRelErrLse(lse1, lse), 1e-6) << where;
    EXPECT_LT(MaxRelErr(dq1, dq), 1e-6) << where;
    EXPECT_LT(MaxRelErr(dk1, dk), 1e-6) << where;
    EXPECT_LT(MaxRelErr(dv1, dv), 1e-6) << where;
  }
}

TEST(KernelsAttentionTest, BackwardAccumulatesWhenAsked) {
  const Problem p = MakeProblem(22, 2, 64, {40, 9}, {33, 70});
  const AttentionShape shape = p.Shape();
  std::vector<float> o(p.QElems()), lse(p.cu_q.back() * p.h);
  ASSERT_TRUE(
      AttentionForward(shape, p.q.data(), p.k.data(), p.v.data(), o.data(), lse.data()).ok());
  std::vector<float> dq(p.QElems()), dk(p.KElems()), dv(p.KElems());
  ASSERT_TRUE(AttentionBackward(shape, p.q.data(), p.k.data(), p.v.data(), o.data(), p.d_o.data(),
                                lse.data(), dq.data(), dk.data(), dv.data())
                  .ok());
  core::Rng rng(23);
  const std::vector<float> dq0 = RandomNormal(rng, p.QElems()), dk0 = RandomNormal(rng, p.KElems()),
                           dv0 = RandomNormal(rng, p.KElems());
  std::vector<float> dq_acc = dq0, dk_acc = dk0, dv_acc = dv0;
  AttentionBackwardOptions opts;
  opts.accumulate_dq = true;
  opts.accumulate_dkv = true;
  ASSERT_TRUE(AttentionBackward(shape, p.q.data(), p.k.data(), p.v.data(), o.data(), p.d_o.data(),
                                lse.data(), dq_acc.data(), dk_acc.data(), dv_acc.data(), opts)
                  .ok());
  std::vector<float> dq_want(dq0), dk_want(dk0), dv_want(dv0);
  for (size_t i = 0; i < dq.size(); ++i) dq_want[i] += dq[i];
  for (size_t i = 0; i < dk.size(); ++i) dk_want[i] += dk[i], dv_want[i] += dv[i];
  EXPECT_LT(MaxRelErr(dq_acc, dq_want), 1e-6);
  EXPECT_LT(MaxRelErr(dk_acc, dk_want), 1e-6);
  EXPECT_LT(MaxRelErr(dv_acc, dv_want), 1e-6);
}

// Loss = sum(O * G): central differences of the double-precision reference forward against the
// analytic gradients of the reference backward (double) and the tiled backward (float, 2 x 3
// tiles: smaller than the sequences).
void ExpectBackwardMatchesFiniteDifferences(const AttentionShape& shape, uint64_t seed) {
  const int64_t h = shape.num_heads, d = shape.head_dim;
  const int64_t nq = shape.total_q() * h * d, nk = shape.total_k() * h * d;
  core::Rng rng(seed);
  std::vector<double> q(nq), k(nk), v(nk), g(nq);
  for (auto* t : {&q, &k, &v, &g}) {
    for (double& x : *t) x = rng.Normal();
  }
  auto loss = [&](const std::vector<double>& qq, const std::vector<double>& kk,
                  const std::vector<double>& vv) {
    std::vector<double> o(nq), lse(shape.total_q() * h);
    CHECK(AttentionForwardReference<double>(shape, qq.data(), kk.data(), vv.data(), o.data(),
                                            lse.data())
              .ok());
    double sum = 0.0;
    for (int64_t i = 0; i < nq; ++i) sum += o[i] * g[i];
    return sum;
  };
  const double eps = 1e-6;
  auto numeric_grad = [&](std::vector<double>* x) {
    std::vector<double> grad(x->size());
    for (size_t i = 0; i < x->size(); ++i) {
      const double saved = (*x)[i];
      (*x)[i] = saved + eps;
      const double up = loss(q, k, v);
      (*x)[i] = saved - eps;
      const double down = loss(q, k, v);
      (*x)[i] = saved;
      grad[i] = (up - down) / (2 * eps);
    }
    return grad;
  };
  const std::vector<double> dq_fd = numeric_grad(&q), dk_fd = numeric_grad(&k),
                            dv_fd = numeric_grad(&v);

  // Reference backward in double.
  std::vector<double> o(nq), lse(shape.total_q() * h), dq(nq), dk(nk), dv(nk);
  ASSERT_TRUE(
      AttentionForwardReference<double>(shape, q.data(), k.data(), v.data(), o.data(), lse.data())
          .ok());
  ASSERT_TRUE(AttentionBackwardReference<double>(shape, q.data(), k.data(), v.data(), o.data(),
                                                 g.data(), lse.data(), dq.data(), dk.data(),
                                                 dv.data())
                  .ok());
  EXPECT_LT(MaxRelErr(dq, dq_fd), 1e-7);
  EXPECT_LT(MaxRelErr(dk, dk_fd), 1e-7);
  EXPECT_LT(MaxRelErr(dv, dv_fd), 1e-7);

  // Tiled backward in float.
  auto to_float = [](const std::vector<double>& x) {
    return std::vector<float>(x.begin(), x.end());
  };
  const std::vector<float> qf = to_float(q), kf = to_float(k), vf = to_float(v), gf = to_float(g);
  std::vector<float> of(nq), lsef(shape.total_q() * h), dqf(nq), dkf(nk), dvf(nk);
  ASSERT_TRUE(
      AttentionForward(shape, qf.data(), kf.data(), vf.data(), of.data(), lsef.data(), {2, 3})
          .ok());
  AttentionBackwardOptions opts;
  opts.tiling = {2, 3};
  ASSERT_TRUE(AttentionBackward(shape, qf.data(), kf.data(), vf.data(), of.data(), gf.data(),
                                lsef.data(), dqf.data(), dkf.data(), dvf.data(), opts)
                  .ok());
  EXPECT_LT(MaxRelErr(dqf, dq_fd), 1e-5);
  EXPECT_LT(MaxRelErr(dkf, dk_fd), 1e-5);
  EXPECT_LT(MaxRelErr(dvf, dv_fd), 1e-5);
}

TEST(KernelsAttentionTest, BackwardMatchesFiniteDifferences) {
  const std::vector<int64_t> cu_q = CumSum({3, 2}), cu_k = CumSum({4, 1});
  ExpectBackwardMatchesFiniteDifferences({2, 4, cu_q, cu_k, 0.7f}, 31);
}

// Causal: a square sequence whose 2 x 3 tiles leave row 2 with no visible key in key tile 1, a
// single query against 3 keys (sees all) and a square pair.
TEST(KernelsAttentionTest, CausalBackwardMatchesFiniteDifferences) {
  const std::vector<int64_t> cu_q = CumSum({4, 1, 2}), cu_k = CumSum({4, 3, 2});
  ExpectBackwardMatchesFiniteDifferences({2, 4, cu_q, cu_k, 0.7f, /*causal=*/true}, 32);
}

// Ring-attention backward: running the backward once per key chunk with the GLOBAL O and LSE,
// accumulating dQ, reproduces the full-key gradients; each chunk's dK, dV are its slice.
TEST(KernelsAttentionTest, BackwardOverKeyChunksWithGlobalLseEqualsFull) {
  const Problem p = MakeProblem(41, 3, 128, {150, 20, 64}, {300, 17, 90});
  const std::vector<int64_t> cuts = {111, 0, 90};  // chunk 1 gets the first `cut` keys
  const AttentionShape full = p.Shape();
  const int64_t width = p.h * p.d;
  std::vector<float> o(p.QElems()), lse(p.cu_q.back() * p.h);
  ASSERT_TRUE(
      AttentionForward(full, p.q.data(), p.k.data(), p.v.data(), o.data(), lse.data()).ok());
  std::vector<float> dq(p.QElems()), dk(p.KElems()), dv(p.KElems());
  ASSERT_TRUE(AttentionBackward(full, p.q.data(), p.k.data(), p.v.data(), o.data(), p.d_o.data(),
                                lse.data(), dq.data(), dk.data(), dv.data())
                  .ok());

  std::vector<float> k1, k2, v1, v2, dk1_want, dk2_want, dv1_want, dv2_want;
  std::vector<int64_t> cu_k1, cu_k2;
  SplitTokens(p.cu_k, cuts, width, p.k, &k1, &k2, &cu_k1, &cu_k2);
  SplitTokens(p.cu_k, cuts, width, p.v, &v1, &v2, &cu_k1, &cu_k2);
  SplitTokens(p.cu_k, cuts, width, dk, &dk1_want, &dk2_want, &cu_k1, &cu_k2);
  SplitTokens(p.cu_k, cuts, width, dv, &dv1_want, &dv2_want, &cu_k1, &cu_k2);

  std::vector<float> dq_ring(p.QElems(), NAN), dk1(k1.size()), dv1(k1.size()), dk2(k2.size()),
      dv2(k2.size());
  AttentionBackwardOptions opts;
  const AttentionShape chunk1{p.h, p.d, p.cu_q, cu_k1, std::nullopt};
  ASSERT_TRUE(AttentionBackward(chunk1, p.q.data(), k1.data(), v1.data(), o.data(), p.d_o.data(),
                                lse.data(), dq_ring.data(), dk1.data(), dv1.data(), opts)
                  .ok());
  opts.accumulate_dq = true;
  const AttentionShape chunk2{p.h, p.d, p.cu_q, cu_k2, std::nullopt};
  ASSERT_TRUE(AttentionBackward(chunk2, p.q.data(), k2.data(), v2.data(), o.data(), p.d_o.data(),
                                lse.data(), dq_ring.data(), dk2.data(), dv2.data(), opts)
                  .ok());
  EXPECT_LT(MaxRelErr(dq_ring, dq), 1e-5);
  EXPECT_LT(MaxRelErr(dk1, dk1_want), 1e-5);
  EXPECT_LT(MaxRelErr(dv1, dv1_want), 1e-5);
  EXPECT_LT(MaxRelErr(dk2, dk2_want), 1e-5);
  EXPECT_LT(MaxRelErr(dv2, dv2_want), 1e-5);
}

// Each bad input returns InvalidArgument whose message names the offending field.
TEST(KernelsAttentionTest, BadInputReturnsStatus) {
  const Problem p = MakeProblem(51, 2, 64, {4, 3}, {5, 2});
  std::vector<float> o(p.QElems()), lse(p.cu_q.back() * p.h), dq(p.QElems()), dk(p.KElems()),
      dv(p.KElems());
  const std::vector<int64_t> cu_short = {0, 4}, cu_neg = {0, 5, 4}, cu_offset = {1, 5, 7};
  struct Bad {
    AttentionShape shape;
    AttentionTiling tiling;
    bool null_q;
    std::string field;
  };
  const AttentionShape good = p.Shape();
  std::vector<Bad> bad = {
      {{2, 64, p.cu_q, cu_short, std::nullopt}, {}, false, "cu_seqlens_k"},
      {{2, 64, p.cu_q, cu_neg, std::nullopt}, {}, false, "cu_seqlens_k[2]"},
      {{2, 64, cu_offset, p.cu_k, std::nullopt}, {}, false, "cu_seqlens_q[0]"},
      {{2, 64, {}, {}, std::nullopt}, {}, false, "cu_seqlens_q"},
      {{0, 64, p.cu_q, p.cu_k, std::nullopt}, {}, false, "num_heads"},
      {{2, -1, p.cu_q, p.cu_k, std::nullopt}, {}, false, "head_dim"},
      {{2, 64, p.cu_q, p.cu_k, NAN}, {}, false, "scale"},
      {good, {0, 64}, false, "block_q"},
      {good, {64, -5}, false, "block_k"},
      {good, {}, true, "attention.q"},
      {p.Shape(/*causal=*/true), {}, false, "causal"},  // sequence 1: 3 queries, 2 keys
  };
  for (const Bad& b : bad) {
    const float* q = b.null_q ? nullptr : p.q.data();
    core::Status fwd =
        AttentionForward(b.shape, q, p.k.data(), p.v.data(), o.data(), lse.data(), b.tiling);
    EXPECT_EQ(fwd.code(), core::StatusCode::kInvalidArgument) << b.field;
    EXPECT_NE(fwd.message().find(b.field), std::string::npos) << fwd.message();
    AttentionBackwardOptions opts;
    opts.tiling = b.tiling;
    core::Status bwd = AttentionBackward(b.shape, q, p.k.data(), p.v.data(), o.data(), p.d_o.data(),
                                         lse.data(), dq.data(), dk.data(), dv.data(), opts);
    EXPECT_EQ(bwd.code(), core::StatusCode::kInvalidArgument) << b.field;
    EXPECT_NE(bwd.message().find(b.field), std::string::npos) << bwd.message();
    if (b.tiling.block_q >= 1 && b.tiling.block_k >= 1) {
      core::Status ref = AttentionForwardReference<float>(b.shape, q, p.k.data(), p.v.data(),
                                                          o.data(), lse.data());
      EXPECT_EQ(ref.code(), core::StatusCode::kInvalidArgument) << b.field;
    }
  }
  // The causal refusal names the sequence and both lengths.
  const std::string causal_msg = ValidateAttentionShape(p.Shape(/*causal=*/true)).message();
  for (const char* part : {"sequence 1", "3 query tokens", "2 keys"}) {
    EXPECT_NE(causal_msg.find(part), std::string::npos) << causal_msg;
  }
  // Zero sequences is a valid, empty call.
  const std::vector<int64_t> cu_none = {0};
  EXPECT_TRUE(AttentionForward({2, 64, cu_none, cu_none, std::nullopt}, nullptr, nullptr, nullptr,
                               nullptr, nullptr)
                  .ok());
}

}  // namespace
}  // namespace tessera::kernels
