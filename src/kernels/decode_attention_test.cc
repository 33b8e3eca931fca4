#include "kernels/decode_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/infinity.h"
#include "core/rng.h"
#include "core/tensor_error.h"
#include "kernels/attention_reference.h"
#include "kernels/decode_attention_stream.h"
#include "kernels/kernels_test_util.h"
#include "kernels/lse_merge.h"

namespace tessera::kernels {
namespace {

using core::kNegInf;
using testing::AvailableBackends;
using testing::RandomNormal;
using testing::ScopedGemmBackend;

enum class Layout { kTokenMajor, kHeadMajor };

const char* LayoutName(Layout layout) {
  return layout == Layout::kTokenMajor ? "token-major" : "head-major";
}

// A KV cache of Tk tokens (logical K, V of shape (Tk, Hkv, D)) stored as segments of the given
// lengths in one layout. Head-major pages hold 3 spare tokens so the head stride exceeds len * D.
struct Cache {
  int64_t hkv = 0, d = 0;
  std::vector<float> k, v;                       // logical (Tk, Hkv, D)
  std::vector<std::vector<float>> seg_k, seg_v;  // per segment storage
  std::vector<KvSegment> segments;

  int64_t Tokens() const { return static_cast<int64_t>(k.size()) / (hkv * d); }
};

Cache MakeCache(core::Rng& rng, int64_t hkv, int64_t d, const std::vector<int64_t>& lens,
                Layout layout) {
  Cache c;
  c.hkv = hkv;
  c.d = d;
  int64_t tk = 0;
  for (int64_t l : lens) tk += l;
  c.k = RandomNormal(rng, tk * hkv * d);
  c.v = RandomNormal(rng, tk * hkv * d);
  int64_t start = 0;
  for (int64_t len : lens) {
    const int64_t page = len + 3;
    const int64_t ts = layout == Layout::kTokenMajor ? hkv * d : d;
    const int64_t hs = layout == Layout::kTokenMajor ? d : page * d;
    // Unused slots hold NaN: reading them would poison the result.
    std::vector<float> sk(std::max<int64_t>(page * hkv * d, 1), NAN), sv = sk;
    for (int64_t t = 0; t < len; ++t) {
      for (int64_t g = 0; g < hkv; ++g) {
        for (int64_t x = 0; x < d; ++x) {
          const int64_t src = ((start + t) * hkv + g) * d + x;
          sk[t * ts + g * hs + x] = c.k[src];
          sv[t * ts + g * hs + x] = c.v[src];
        }
      }
    }
    c.seg_k.push_back(std::move(sk));
    c.seg_v.push_back(std::move(sv));
    start += len;
  }
  for (size_t i = 0; i < lens.size(); ++i) {
    const int64_t ts = layout == Layout::kTokenMajor ? hkv * d : d;
    const int64_t hs = layout == Layout::kTokenMajor ? d : (lens[i] + 3) * d;
    c.segments.push_back({c.seg_k[i].data(), c.seg_v[i].data(), lens[i], ts, hs});
  }
  return c;
}

// K or V (Tk, Hkv, D) with each KV head repeated to the G query heads that use it: (Tk, H, D).
std::vector<float> RepeatHeads(const std::vector<float>& x, int64_t tk, int64_t h, int64_t hkv,
                               int64_t d) {
  std::vector<float> out(tk * h * d);
  for (int64_t t = 0; t < tk; ++t) {
    for (int64_t head = 0; head < h; ++head) {
      const float* src = x.data() + (t * hkv + head / (h / hkv)) * d;
      std::copy_n(src, d, out.data() + (t * h + head) * d);
    }
  }
  return out;
}

double OutputError(const std::vector<float>& got, const std::vector<float>& ref) {
  return core::CompareTensors(got, ref).max_rel;
}

// Relative error of lse where both are finite; -inf entries must match exactly.
double LseError(const std::vector<float>& got, const std::vector<float>& ref) {
  std::vector<float> g, r;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (ref[i] == kNegInf || got[i] == kNegInf) {
      if (ref[i] != got[i]) return INFINITY;
      continue;
    }
    g.push_back(got[i]);
    r.push_back(ref[i]);
  }
  return r.empty() ? 0.0 : core::CompareTensors(g, r).max_rel;
}

struct Result {
  std::vector<float> o, lse;
};

Result RunKernel(const DecodeAttentionShape& shape, const std::vector<float>& q,
                 std::span<const KvSegment> segments, bool reference = false) {
  Result r{std::vector<float>(shape.num_q_tokens * shape.num_heads * shape.head_dim, NAN),
           std::vector<float>(shape.num_q_tokens * shape.num_heads, NAN)};
  const core::Status st =
      reference ? PartialAttentionReference(shape, q.data(), segments, r.o.data(), r.lse.data())
                : PartialAttention(shape, q.data(), segments, r.o.data(), r.lse.data());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return r;
}

const std::vector<int64_t> kAllLens = {257, 0, 1000, 1, 0, 255, 256};

struct Case {
  int64_t h, hkv, d, tq;
  bool causal;
  Layout layout;
  std::vector<int64_t> lens;

  std::string Name() const {
    return "H=" + std::to_string(h) + " Hkv=" + std::to_string(hkv) + " D=" + std::to_string(d) +
           " Tq=" + std::to_string(tq) + (causal ? " causal " : " full ") + LayoutName(layout) +
           " segs=" + std::to_string(lens.size());
  }
};

std::vector<Case> Cases() {
  std::vector<Case> out;
  for (const auto& [h, hkv] : {std::pair<int64_t, int64_t>{8, 2}, {8, 8}}) {
    for (int64_t d : {64, 128}) {
      for (int64_t tq : {1, 3, 17}) {
        for (bool causal : {false, true}) {
          for (Layout layout : {Layout::kTokenMajor, Layout::kHeadMajor}) {
            out.push_back({h, hkv, d, tq, causal, layout, kAllLens});
          }
        }
      }
    }
  }
  // The streaming kernel (D % 8 == 0, Tq * G < 16) at G = 1, 4, 8 with 1 to 8 rows (16 rows
  // take the GEMM path), over block tails (lengths 1, 63, 64, 65, 130 around the 64-token
  // block) and a long segment; {16, 4} has four KV heads per token-major row, all of which the
  // first head's pass prefetches.
  const std::vector<int64_t> block_lens = {65, 1, 63, 64, 0, 130, 700};
  for (const auto& [h, hkv] :
       {std::pair<int64_t, int64_t>{4, 4}, {8, 2}, {8, 1}, {16, 2}, {16, 4}}) {
    for (int64_t d : {64, 128, 8, 24}) {
      for (int64_t tq : {1, 2}) {
        for (bool causal : {false, true}) {
          for (Layout layout : {Layout::kTokenMajor, Layout::kHeadMajor}) {
            out.push_back({h, hkv, d, tq, causal, layout, block_lens});
          }
        }
      }
    }
  }
  // The fallback tile loops: D not a multiple of 8, decode shapes.
  out.push_back({8, 2, 20, 1, false, Layout::kTokenMajor, block_lens});
  out.push_back({8, 1, 36, 2, true, Layout::kHeadMajor, block_lens});
  // Short lists: one key, keys only in the last segment, a generic head dim.
  out.push_back({8, 2, 64, 1, false, Layout::kTokenMajor, {1}});
  out.push_back({4, 1, 40, 3, true, Layout::kHeadMajor, {0, 0, 5}});
  out.push_back({6, 3, 40, 5, true, Layout::kTokenMajor, {2, 3}});
  return out;
}

TEST(DecodeAttention, MatchesBothReferences) {
  core::Rng rng(11);
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.Name());
    const Cache cache = MakeCache(rng, c.hkv, c.d, c.lens, c.layout);
    const int64_t tk = cache.Tokens();
    const std::vector<float> q = RandomNormal(rng, c.tq * c.h * c.d);
    const DecodeAttentionShape shape{c.tq, c.h, c.hkv, c.d, std::nullopt, c.causal};
    const Result got = RunKernel(shape, q, cache.segments);
    const Result ref = RunKernel(shape, q, cache.segments, /*reference=*/true);
    EXPECT_LE(OutputError(got.o, ref.o), 1e-5);
    EXPECT_LE(LseError(got.lse, ref.lse), 1e-5);

    const std::vector<int64_t> cu_q = {0, c.tq}, cu_k = {0, tk};
    const AttentionShape full{c.h, c.d, cu_q, cu_k, std::nullopt, c.causal};
    const std::vector<float> k = RepeatHeads(cache.k, tk, c.h, c.hkv, c.d);
    const std::vector<float> v = RepeatHeads(cache.v, tk, c.h, c.hkv, c.d);
    Result mha{std::vector<float>(got.o.size()), std::vector<float>(got.lse.size())};
    ASSERT_TRUE(AttentionForwardReference<float>(full, q.data(), k.data(), v.data(), mha.o.data(),
                                                 mha.lse.data())
                    .ok());
    EXPECT_LE(OutputError(got.o, mha.o), 1e-5);
    EXPECT_LE(LseError(got.lse, mha.lse), 1e-5);
  }
}

// The streaming kernel's copy for every target this CPU runs (AVX-512, AVX2, baseline), driven
// directly over a segment list (each call given the next segment to prefetch) and finished to
// (o, lse) like PartialAttention, against the reference: G = 1, 2, 4, 8 with 1 to 16 rows,
// D = 8, 24, 64, 128, both layouts (token-major with 8 KV heads: two head groups per block),
// block tails, empty segments, causal rows.
TEST(DecodeAttention, StreamKernelOnEveryTarget) {
  using internal::StreamTarget;
  core::Rng rng(21);
  const std::vector<int64_t> lens = {65, 1, 63, 0, 64, 130, 300};
  for (StreamTarget target :
       {StreamTarget::kAvx512, StreamTarget::kAvx2, StreamTarget::kBaseline}) {
    if (!internal::StreamTargetSupported(target)) continue;
    for (const auto& [h, hkv] : {std::pair<int64_t, int64_t>{4, 4}, {8, 2}, {8, 1}, {16, 8}}) {
      for (int64_t d : {8, 24, 64, 128}) {
        for (int64_t tq : {1, 2}) {
          for (Layout layout : {Layout::kTokenMajor, Layout::kHeadMajor}) {
            const bool causal = tq == 2;
            SCOPED_TRACE("target " + std::to_string(static_cast<int>(target)) +
                         " H=" + std::to_string(h) + " Hkv=" + std::to_string(hkv) +
                         " D=" + std::to_string(d) + " Tq=" + std::to_string(tq) + " " +
                         LayoutName(layout));
            const Cache cache = MakeCache(rng, hkv, d, lens, layout);
            const int64_t g = h / hkv, rows = tq * g, tk = cache.Tokens();
            const std::vector<float> q = RandomNormal(rng, tq * h * d);
            const float scale = 1.0f / std::sqrt(static_cast<float>(d));
            std::vector<float> qs(hkv * rows * d), acc(hkv * rows * d, 0.0f);
            std::vector<float> row_max(hkv * rows, kNegInf), row_sum(hkv * rows, 0.0f);
            for (int64_t kv = 0; kv < hkv; ++kv) {
              for (int64_t r = 0; r < rows; ++r) {
                for (int64_t x = 0; x < d; ++x) {
                  qs[(kv * rows + r) * d + x] = q[((r / g) * h + kv * g + r % g) * d + x] * scale;
                }
              }
            }
            const std::vector<KvSegment>& segs = cache.segments;
            int64_t j0 = 0;
            for (size_t i = 0; i < segs.size(); ++i) {
              if (segs[i].len == 0) continue;
              std::vector<int64_t> visible(rows);
              for (int64_t r = 0; r < rows; ++r) {
                visible[r] = std::clamp<int64_t>(r / g + tk - tq - j0 + 1, 0, segs[i].len);
              }
              internal::DecodeStreamTileOn(target, qs.data(), hkv, rows, d, segs[i],
                                           i + 1 < segs.size() ? &segs[i + 1] : nullptr,
                                           causal ? visible.data() : nullptr, row_max.data(),
                                           row_sum.data(), acc.data());
              j0 += segs[i].len;
            }
            Result got{std::vector<float>(tq * h * d), std::vector<float>(tq * h)};
            for (int64_t kv = 0; kv < hkv; ++kv) {
              for (int64_t r = 0; r < rows; ++r) {
                const int64_t idx = kv * rows + r, out = (r / g) * h + kv * g + r % g;
                for (int64_t x = 0; x < d; ++x)
                  got.o[out * d + x] = acc[idx * d + x] / row_sum[idx];
                got.lse[out] = row_max[idx] + std::log(row_sum[idx]);
              }
            }
            const DecodeAttentionShape shape{tq, h, hkv, d, std::nullopt, causal};
            const Result ref = RunKernel(shape, q, segs, /*reference=*/true);
            EXPECT_LE(OutputError(got.o, ref.o), 1e-5);
            EXPECT_LE(LseError(got.lse, ref.lse), 1e-5);
          }
        }
      }
    }
  }
}

// Both GEMM backends on the many-rows path (Tq * G >= 16) and an explicit scale.
TEST(DecodeAttention, GemmPathOnEveryBackendWithScale) {
  core::Rng rng(12);
  const Cache cache = MakeCache(rng, 2, 64, {300, 0, 513}, Layout::kHeadMajor);
  const std::vector<float> q = RandomNormal(rng, 9 * 8 * 64);
  const DecodeAttentionShape shape{9, 8, 2, 64, 0.3f, true};
  const Result ref = RunKernel(shape, q, cache.segments, /*reference=*/true);
  for (GemmBackend backend : AvailableBackends()) {
    SCOPED_TRACE(GemmBackendName(backend));
    ScopedGemmBackend scoped(backend);
    const Result got = RunKernel(shape, q, cache.segments);
    EXPECT_LE(OutputError(got.o, ref.o), 1e-5);
    EXPECT_LE(LseError(got.lse, ref.lse), 1e-5);
  }
}

// Scores that grow along the keys (and one huge early score) so that the streaming kernel's
// running max increases in many blocks: every rescale of the accumulators is exercised.
TEST(DecodeAttention, GrowingScoresRescaleAcrossBlocks) {
  core::Rng rng(17);
  for (Layout layout : {Layout::kTokenMajor, Layout::kHeadMajor}) {
    SCOPED_TRACE(LayoutName(layout));
    Cache cache = MakeCache(rng, 2, 64, {300, 200}, layout);
    const int64_t tq = 1, h = 8, d = 64;
    const std::vector<float> q = RandomNormal(rng, tq * h * d);
    // Key t of segment i becomes (1 + t / 40) * k: scores drift up by about 12x over a segment.
    for (size_t i = 0; i < cache.segments.size(); ++i) {
      const KvSegment& seg = cache.segments[i];
      for (int64_t t = 0; t < seg.len; ++t) {
        for (int64_t g = 0; g < 2; ++g) {
          float* row = cache.seg_k[i].data() + t * seg.token_stride + g * seg.head_stride;
          for (int64_t x = 0; x < d; ++x) row[x] *= 1.0f + static_cast<float>(t) / 40.0f;
        }
      }
    }
    cache.seg_k[0][3] = 40.0f;  // one large score early in the first block
    const DecodeAttentionShape shape{tq, h, 2, d, std::nullopt, false};
    const Result got = RunKernel(shape, q, cache.segments);
    const Result ref = RunKernel(shape, q, cache.segments, /*reference=*/true);
    EXPECT_LE(OutputError(got.o, ref.o), 1e-5);
    EXPECT_LE(LseError(got.lse, ref.lse), 1e-5);
  }
}

TEST(DecodeAttention, NoKeysIsTheMergeIdentity) {
  core::Rng rng(13);
  const std::vector<float> q = RandomNormal(rng, 2 * 4 * 64);
  const DecodeAttentionShape shape{2, 4, 2, 64, std::nullopt, false};
  const Cache empty = MakeCache(rng, 2, 64, {0, 0}, Layout::kTokenMajor);
  for (std::span<const KvSegment> segs :
       {std::span<const KvSegment>(), std::span<const KvSegment>(empty.segments)}) {
    for (bool reference : {false, true}) {
      const Result r = RunKernel(shape, q, segs, reference);
      for (float x : r.o) EXPECT_EQ(x, 0.0f);
      for (float x : r.lse) EXPECT_EQ(x, kNegInf);
    }
  }
}

TEST(DecodeAttention, MergeOfTwoSegmentListsEqualsOneCall) {
  core::Rng rng(14);
  for (Layout layout : {Layout::kTokenMajor, Layout::kHeadMajor}) {
    SCOPED_TRACE(LayoutName(layout));
    const Cache cache = MakeCache(rng, 2, 128, kAllLens, layout);
    const int64_t tq = 3, h = 8, d = 128;
    const std::vector<float> q = RandomNormal(rng, tq * h * d);
    const DecodeAttentionShape shape{tq, h, 2, d, std::nullopt, false};
    const std::span<const KvSegment> all(cache.segments);
    const Result whole = RunKernel(shape, q, all);
    const Result a = RunKernel(shape, q, all.subspan(0, 3));
    const Result b = RunKernel(shape, q, all.subspan(3));
    Result merged{std::vector<float>(whole.o.size()), std::vector<float>(whole.lse.size())};
    ASSERT_TRUE(MergeAttentionPartials(tq, h, d, a.o.data(), a.lse.data(), b.o.data(), b.lse.data(),
                                       merged.o.data(), merged.lse.data())
                    .ok());
    EXPECT_LE(OutputError(merged.o, whole.o), 1e-5);
    EXPECT_LE(LseError(merged.lse, whole.lse), 1e-5);
  }
}

TEST(DecodeAttention, DeterministicBitwise) {
  core::Rng rng(15);
  for (int64_t tq : {1, 17}) {
    const Cache cache = MakeCache(rng, 2, 64, kAllLens, Layout::kTokenMajor);
    const std::vector<float> q = RandomNormal(rng, tq * 8 * 64);
    const DecodeAttentionShape shape{tq, 8, 2, 64, std::nullopt, true};
    const Result a = RunKernel(shape, q, cache.segments);
    const Result b = RunKernel(shape, q, cache.segments);
    EXPECT_EQ(std::memcmp(a.o.data(), b.o.data(), a.o.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * sizeof(float)), 0);
  }
}

// Expects InvalidArgument from both entry points, with `field` in the message.
void ExpectInvalid(const DecodeAttentionShape& shape, const float* q,
                   std::span<const KvSegment> segs, float* o, float* lse,
                   const std::string& field) {
  for (bool reference : {false, true}) {
    const core::Status st = reference ? PartialAttentionReference(shape, q, segs, o, lse)
                                      : PartialAttention(shape, q, segs, o, lse);
    EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(st.message().find(field), std::string::npos) << st.ToString();
  }
}

TEST(DecodeAttention, InvalidArgumentsNameTheField) {
  const int64_t h = 4, hkv = 2, d = 8, len = 4;
  std::vector<float> q(2 * h * d, 1.0f), o(q.size()), lse(2 * h), k(len * hkv * d, 1.0f), v = k;
  const KvSegment good{k.data(), v.data(), len, hkv * d, d};
  const DecodeAttentionShape ok{2, h, hkv, d, std::nullopt, false};
  std::vector<KvSegment> segs = {good};
  auto with = [&](auto edit) {
    DecodeAttentionShape s = ok;
    edit(s);
    return s;
  };
  ExpectInvalid(with([](auto& s) { s.num_q_tokens = 0; }), q.data(), segs, o.data(), lse.data(),
                "num_q_tokens");
  ExpectInvalid(with([](auto& s) { s.num_heads = 0; }), q.data(), segs, o.data(), lse.data(),
                "num_heads");
  ExpectInvalid(with([](auto& s) { s.num_kv_heads = 0; }), q.data(), segs, o.data(), lse.data(),
                "num_kv_heads");
  ExpectInvalid(with([](auto& s) { s.num_kv_heads = 3; }), q.data(), segs, o.data(), lse.data(),
                "num_kv_heads: got 3, must divide num_heads 4");
  ExpectInvalid(with([](auto& s) { s.head_dim = 0; }), q.data(), segs, o.data(), lse.data(),
                "head_dim");
  ExpectInvalid(with([](auto& s) { s.scale = NAN; }), q.data(), segs, o.data(), lse.data(),
                "scale");
  ExpectInvalid(ok, nullptr, segs, o.data(), lse.data(), "decode_attention.q");
  ExpectInvalid(ok, q.data(), segs, nullptr, lse.data(), "decode_attention.o");
  ExpectInvalid(ok, q.data(), segs, o.data(), nullptr, "decode_attention.lse");
  ExpectInvalid(ok, q.data(), segs, q.data(), lse.data(), "o: overlaps q");
  ExpectInvalid(ok, q.data(), segs, o.data(), o.data() + 3, "lse: overlaps o");
  ExpectInvalid(ok, q.data(), segs, k.data(), lse.data(), "o: overlaps segments[0].k");
  ExpectInvalid(ok, q.data(), segs, o.data(), v.data() + 5, "lse: overlaps segments[0].v");
  auto bad_segment = [&](auto edit, const std::string& field) {
    std::vector<KvSegment> s = {KvSegment{}, good};
    edit(s[1]);
    ExpectInvalid(ok, q.data(), s, o.data(), lse.data(), field);
  };
  bad_segment([](KvSegment& s) { s.len = -1; }, "segments[1].len");
  bad_segment([](KvSegment& s) { s.k = nullptr; }, "segments[1].k");
  bad_segment([](KvSegment& s) { s.v = nullptr; }, "segments[1].v");
  bad_segment([](KvSegment& s) { s.token_stride = 0; }, "segments[1].token_stride");
  bad_segment([](KvSegment& s) { s.head_stride = 0; }, "segments[1].head_stride");
  // Token-major with heads overlapping (head_stride < D) or tokens overlapping the heads.
  bad_segment([&](KvSegment& s) { s.head_stride = d - 1; }, "segments[1].head_stride");
  bad_segment([&](KvSegment& s) { s.token_stride = d; }, "segments[1].token_stride");
  // Head-major with tokens overlapping (token_stride < D) or a page too short for len tokens.
  bad_segment(
      [&](KvSegment& s) {
        s.token_stride = d - 1;
        s.head_stride = len * d;
      },
      "segments[1].token_stride");
  bad_segment(
      [&](KvSegment& s) {
        s.token_stride = d;
        s.head_stride = (len - 1) * d;
      },
      "segments[1].head_stride");
  // Causal needs at least Tq keys.
  const std::vector<KvSegment> one = {KvSegment{k.data(), v.data(), 1, hkv * d, d}};
  ExpectInvalid(with([](auto& s) { s.causal = true; }), q.data(), one, o.data(), lse.data(),
                "decode_attention.causal");
}

// One token or one head: the stride of the missing dimension is unconstrained beyond >= 1.
TEST(DecodeAttention, SingleTokenOrHeadStridesAreFree) {
  core::Rng rng(16);
  const int64_t d = 16;
  std::vector<float> k = RandomNormal(rng, 2 * d), v = RandomNormal(rng, 2 * d);
  std::vector<float> q = RandomNormal(rng, 2 * d), o(2 * d), lse(2);
  const std::vector<KvSegment> one_token = {KvSegment{k.data(), v.data(), 1, 1, d}};
  EXPECT_TRUE(
      PartialAttention({1, 2, 2, d, std::nullopt, false}, q.data(), one_token, o.data(), lse.data())
          .ok());
  const std::vector<KvSegment> one_head = {KvSegment{k.data(), v.data(), 2, d, 1}};
  EXPECT_TRUE(
      PartialAttention({1, 2, 1, d, std::nullopt, false}, q.data(), one_head, o.data(), lse.data())
          .ok());
}

}  // namespace
}  // namespace tessera::kernels
