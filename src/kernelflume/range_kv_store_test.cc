// RangeKvStore: appends at the range's length only, reads of what is held, the pool's bound
// checked before a node joins (CheckKvCapacity), and a full pool refused without a change.
#include "kernelflume/range_kv_store.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/rng.h"

namespace tessera::kernelflume {
namespace {

AttentionShape SmallShape() {
  AttentionShape s;
  s.num_layers = 2;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.head_dim = 8;
  s.scale = 0.25f;
  return s;
}

TEST(RangeKvStoreTest, CapacityIsBoundedByThePoolsPageLimit) {
  EXPECT_TRUE(CheckKvCapacity(1, 1).ok());
  const int64_t most = 256 * runtime::PagedPool::kMaxPages;
  EXPECT_TRUE(CheckKvCapacity(most, 256).ok());
  for (int64_t bad : {int64_t{0}, int64_t{-5}, most + 1}) {
    const core::Status st = CheckKvCapacity(bad, 256);
    EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message().rfind("capacity_tokens: got " + std::to_string(bad), 0), 0u)
        << st.message();
    EXPECT_NE(st.message().find(std::to_string(most)), std::string::npos) << st.message();
  }
  EXPECT_EQ(CheckKvCapacity(10, 0).message().rfind("page_tokens: got 0", 0), 0u);
  EXPECT_FALSE(RangeKvStore::Create(SmallShape(), most + 1, 256).ok());
}

TEST(RangeKvStoreTest, AppendsAtTheLengthAndAFullPoolChangesNothing) {
  const AttentionShape s = SmallShape();
  auto store = RangeKvStore::Create(s, 8, 4);  // 2 pages of 4 tokens
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const int64_t row = s.num_kv_heads * s.head_dim;
  std::vector<float> k(8 * row, 1.0f), v(8 * row, 2.0f);
  ASSERT_TRUE((*store)->Append(1, 10, 0, 0, 6, k.data(), v.data()).ok());
  // Past the range's length: refused.
  EXPECT_FALSE((*store)->Append(1, 10, 0, 7, 1, k.data(), v.data()).ok());
  // Below it: a retried step replaces from there (the layer then holds offset + T tokens).
  std::vector<float> k3(row, 3.0f), v3(row, 4.0f);
  ASSERT_TRUE((*store)->Append(1, 10, 0, 5, 1, k3.data(), v3.data()).ok());
  EXPECT_EQ((*store)->Length(10, 0), 6);
  {
    std::vector<kernels::KvSegment> seg;
    ASSERT_TRUE((*store)->AddSegments(1, 10, 0, 6, seg).ok());
    ASSERT_EQ(seg.size(), 2u);  // pages of 4: token 5 is the second token of page 2
    EXPECT_EQ(seg[1].k[1 * seg[1].token_stride], 3.0f);
    EXPECT_EQ(seg[1].v[1 * seg[1].token_stride], 4.0f);
    EXPECT_EQ(seg[1].k[0], 1.0f);
  }
  // Reading more than layer 1 holds: FailedPrecondition (the append is in flight).
  std::vector<kernels::KvSegment> segments;
  EXPECT_EQ((*store)->AddSegments(1, 10, 1, 1, segments).code(),
            core::StatusCode::kFailedPrecondition);
  EXPECT_TRUE((*store)->AddSegments(1, 10, 0, 6, segments).ok());
  int64_t tokens = 0;
  for (const auto& seg : segments) tokens += seg.len;
  EXPECT_EQ(tokens, 6);
  // A second range needs a third page: the pool is full, and the store is unchanged.
  EXPECT_FALSE((*store)->Append(1, 11, 0, 0, 3, k.data(), v.data()).ok());
  EXPECT_TRUE((*store)->Append(1, 10, 0, 6, 2, k.data(), v.data()).ok());
}

TEST(RangeKvStoreTest, ExportedPagesImportElsewhereAndFreeOneRange) {
  const AttentionShape s = SmallShape();
  auto a = RangeKvStore::Create(s, 64, 4);
  auto b = RangeKvStore::Create(s, 64, 4);
  ASSERT_TRUE(a.ok() && b.ok());
  const int64_t row = s.num_kv_heads * s.head_dim;
  core::Rng rng(3);
  std::vector<float> k(7 * row), v(7 * row);
  for (float& x : k) x = rng.Uniform(-1, 1);
  for (float& x : v) x = rng.Uniform(-1, 1);
  for (int32_t l = 0; l < s.num_layers; ++l) {
    ASSERT_TRUE((*a)->Append(1, 10, l, 0, 7, k.data(), v.data()).ok());
  }
  // Half-appended (layer 0 only): not sealed, no export.
  ASSERT_TRUE((*a)->Append(1, 11, 0, 0, 2, k.data(), v.data()).ok());
  EXPECT_EQ((*a)->Export(1, 11).status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*a)->Export(2, 10).status().code(), core::StatusCode::kNotFound);
  auto pages = (*a)->Export(1, 10);
  ASSERT_TRUE(pages.ok()) << pages.status().ToString();
  EXPECT_EQ(pages->tokens, 7);
  ASSERT_EQ(pages->pages.size(), 2u);
  const std::span<std::byte> pool = (*a)->PoolBytes();
  ASSERT_TRUE((*b)->ImportRange(1, 10, 7,
                                [&](size_t i, std::span<std::byte> page) {
                                  std::memcpy(page.data(),
                                              pool.data() + pages->pages[i] * (*a)->page_bytes(),
                                              page.size());
                                  return core::Status::Ok();
                                })
                  .ok());
  EXPECT_FALSE((*b)->ImportRange(1, 10, 7, [](size_t, auto) { return core::Status::Ok(); }).ok());
  // Same segments' contents on both.
  for (int32_t l = 0; l < s.num_layers; ++l) {
    std::vector<kernels::KvSegment> sa, sb;
    ASSERT_TRUE((*a)->AddSegments(1, 10, l, 7, sa).ok());
    ASSERT_TRUE((*b)->AddSegments(1, 10, l, 7, sb).ok());
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t i = 0; i < sa.size(); ++i) {
      for (int64_t t = 0; t < sa[i].len; ++t) {
        for (int64_t d = 0; d < s.head_dim; ++d) {
          EXPECT_EQ(sa[i].k[t * sa[i].token_stride + d], sb[i].k[t * sb[i].token_stride + d]);
          EXPECT_EQ(sa[i].v[t * sa[i].token_stride + d], sb[i].v[t * sb[i].token_stride + d]);
        }
      }
    }
  }
  // A failing fill leaves the store unchanged.
  const int64_t used = (*b)->used_pages();
  EXPECT_FALSE(
      (*b)->ImportRange(1, 12, 5, [](size_t, auto) { return core::Unavailable("peer gone"); })
          .ok());
  EXPECT_EQ((*b)->used_pages(), used);
  EXPECT_TRUE((*a)->FreeRange(1, 10));
  EXPECT_FALSE((*a)->FreeRange(1, 10));
  EXPECT_EQ((*a)->num_ranges(), 1);
}

}  // namespace
}  // namespace tessera::kernelflume
