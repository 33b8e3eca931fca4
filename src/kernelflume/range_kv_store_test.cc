// RangeKvStore: appends at the range's length only, reads of what is held, the pool's bound
// checked before a node joins (CheckKvCapacity), and a full pool refused without a change.
#include "kernelflume/range_kv_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
  // Not at the range's length: refused.
  EXPECT_FALSE((*store)->Append(1, 10, 0, 5, 1, k.data(), v.data()).ok());
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

}  // namespace
}  // namespace tessera::kernelflume
