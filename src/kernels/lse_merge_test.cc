#include "kernels/lse_merge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/infinity.h"
#include "core/rng.h"
#include "kernels/attention.h"
#include "kernels/attention_reference.h"
#include "kernels/kernels_test_util.h"

namespace tessera::kernels {
namespace {

using testing::CumSum;
using testing::MaxRelErr;
using testing::MaxRelErrLse;
using testing::RandomNormal;
using testing::SplitTokens;

using core::kNegInf;

struct Partial {
  std::vector<float> o, lse;
};

Partial Forward(int64_t h, int64_t d, const std::vector<int64_t>& cu_q,
                const std::vector<int64_t>& cu_k, const std::vector<float>& q,
                const std::vector<float>& k, const std::vector<float>& v) {
  Partial out{std::vector<float>(q.size()), std::vector<float>(cu_q.back() * h)};
  CHECK(AttentionForward({h, d, cu_q, cu_k, std::nullopt}, q.data(), k.data(), v.data(),
                         out.o.data(), out.lse.data())
            .ok());
  return out;
}

// attention over [K1; K2] == merge(attention over K1, attention over K2), per sequence, with a
// sequence whose first chunk is empty (LSE -inf) and one whose second chunk is empty.
TEST(KernelsLseMergeTest, MergeOfKeyChunksEqualsFullAttention) {
  const int64_t h = 3, d = 64, width = h * d;
  const std::vector<int64_t> cu_q = CumSum({70, 1, 129}), cu_k = CumSum({200, 33, 140});
  const std::vector<int64_t> cuts = {77, 0, 140};
  core::Rng rng(61);
  const std::vector<float> q = RandomNormal(rng, cu_q.back() * width),
                           k = RandomNormal(rng, cu_k.back() * width),
                           v = RandomNormal(rng, cu_k.back() * width);
  std::vector<float> k1, k2, v1, v2;
  std::vector<int64_t> cu_k1, cu_k2;
  SplitTokens(cu_k, cuts, width, k, &k1, &k2, &cu_k1, &cu_k2);
  SplitTokens(cu_k, cuts, width, v, &v1, &v2, &cu_k1, &cu_k2);

  const Partial full = Forward(h, d, cu_q, cu_k, q, k, v);
  const Partial a = Forward(h, d, cu_q, cu_k1, q, k1, v1);
  const Partial b = Forward(h, d, cu_q, cu_k2, q, k2, v2);
  Partial merged{std::vector<float>(full.o.size()), std::vector<float>(full.lse.size())};
  ASSERT_TRUE(MergeAttentionPartials(cu_q.back(), h, d, a.o.data(), a.lse.data(), b.o.data(),
                                     b.lse.data(), merged.o.data(), merged.lse.data())
                  .ok());
  EXPECT_LT(MaxRelErr(merged.o, full.o), 1e-5);
  EXPECT_LT(MaxRelErrLse(merged.lse, full.lse), 1e-6);

  // The in-place form folds the chunks into a running result that starts empty (0, -inf),
  // in either order.
  for (bool a_first : {true, false}) {
    Partial acc{std::vector<float>(full.o.size(), 0.0f),
                std::vector<float>(full.lse.size(), kNegInf)};
    for (const Partial* part : a_first ? std::vector{&a, &b} : std::vector{&b, &a}) {
      ASSERT_TRUE(MergeAttentionPartialsInPlace(cu_q.back(), h, d, acc.o.data(), acc.lse.data(),
                                                part->o.data(), part->lse.data())
                      .ok());
    }
    EXPECT_LT(MaxRelErr(acc.o, full.o), 1e-5);
    EXPECT_LT(MaxRelErrLse(acc.lse, full.lse), 1e-6);
  }
}

TEST(KernelsLseMergeTest, MatchesReferenceIncludingEmptyRows) {
  const int64_t tokens = 37, h = 2, d = 128;
  core::Rng rng(62);
  std::vector<float> o_a = RandomNormal(rng, tokens * h * d),
                     o_b = RandomNormal(rng, tokens * h * d);
  std::vector<float> lse_a = RandomNormal(rng, tokens * h, 5.0),
                     lse_b = RandomNormal(rng, tokens * h, 5.0);
  lse_a[0] = kNegInf;                            // only b has keys
  lse_b[1] = kNegInf;                            // only a has keys
  lse_a[2] = lse_b[2] = kNegInf;                 // neither: o = 0, lse = -inf
  lse_a[3] = 80.0f, lse_b[3] = -80.0f;           // far apart: no overflow
  for (int64_t x = 0; x < d; ++x) o_a[x] = NAN;  // ignored: its weight is 0 (lse -inf)
  std::vector<float> o(o_a.size()), lse(lse_a.size()), o_ref(o_a.size()), lse_ref(lse_a.size());
  ASSERT_TRUE(MergeAttentionPartials(tokens, h, d, o_a.data(), lse_a.data(), o_b.data(),
                                     lse_b.data(), o.data(), lse.data())
                  .ok());
  std::vector<float> o_a_clean = o_a;
  for (int64_t x = 0; x < d; ++x) o_a_clean[x] = 0.0f;
  ASSERT_TRUE(MergeAttentionReference<float>(tokens, h, d, o_a_clean.data(), lse_a.data(),
                                             o_b.data(), lse_b.data(), o_ref.data(), lse_ref.data())
                  .ok());
  EXPECT_LT(MaxRelErr(o, o_ref), 1e-6);
  EXPECT_LT(MaxRelErrLse(lse, lse_ref), 1e-6);
  for (int64_t x = 0; x < d; ++x) {
    EXPECT_EQ(o[x], o_b[x]);
    EXPECT_EQ(o[2 * d + x], 0.0f);
  }
  EXPECT_EQ(lse[0], lse_b[0]);
  EXPECT_EQ(lse[2], kNegInf);
  EXPECT_FLOAT_EQ(lse[3], 80.0f);
}

TEST(KernelsLseMergeTest, BadArgumentsReturnStatus) {
  std::vector<float> o(8), lse(2);
  EXPECT_EQ(MergeAttentionPartials(-1, 1, 4, o.data(), lse.data(), o.data(), lse.data(), o.data(),
                                   lse.data())
                .code(),
            core::StatusCode::kInvalidArgument);
  core::Status st = MergeAttentionPartials(2, 0, 4, o.data(), lse.data(), o.data(), lse.data(),
                                           o.data(), lse.data());
  EXPECT_NE(st.message().find("merge.num_heads"), std::string::npos) << st.message();
  st = MergeAttentionPartialsInPlace(2, 1, 4, o.data(), nullptr, o.data(), lse.data());
  EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      MergeAttentionPartials(0, 1, 4, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr).ok());
}

}  // namespace
}  // namespace tessera::kernels
