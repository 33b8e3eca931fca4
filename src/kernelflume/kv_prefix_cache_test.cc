#include "kernelflume/kv_prefix_cache.h"

#include <gtest/gtest.h>

namespace tessera::kernelflume {
namespace {

TEST(KvPrefixCacheTest, FindsTheLongestWholeEntryThatPrefixesThePrompt) {
  KvPrefixCache c;
  // Turn 1: 3 blocks (1100 tokens: 2 full blocks), 1300 tokens held with its output.
  const int64_t e1 = c.Insert({10, 11, 12}, 1100, 1300);
  EXPECT_EQ(c.tokens(), 1300);
  // Turn 2 starts with turn 1's two full blocks: 1024 tokens reusable.
  KvPrefixCache::Hit h = c.Lookup({10, 11, 20, 21}, 1800);
  EXPECT_EQ(h.entry, e1);
  EXPECT_EQ(h.tokens, 1024);
  // Only the first block shared: not a hit (an entry matches whole).
  EXPECT_EQ(c.Lookup({10, 30, 31}, 1500).entry, -1);
  // At most input_length - 1 tokens: the last prompt token is computed.
  EXPECT_EQ(c.Lookup({10, 11}, 1024).tokens, 1023);
  // Taking the entry removes it and its tokens.
  EXPECT_EQ(c.Take(e1), 1300);
  EXPECT_EQ(c.Take(e1), 0);
  EXPECT_EQ(c.tokens(), 0);
  EXPECT_EQ(c.Lookup({10, 11, 20, 21}, 1800).entry, -1);
}

TEST(KvPrefixCacheTest, EvictsOldestFirstUntilEnoughIsFree) {
  KvPrefixCache c;
  const int64_t a = c.Insert({1, 2}, 1024, 100);
  const int64_t b = c.Insert({3, 4}, 1024, 200);
  c.Insert({5}, 300, 300);       // no full block: holds memory, never a hit
  EXPECT_EQ(c.Evict(150), 300);  // a (100) then b (200)
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.Lookup({1, 2, 9}, 1500).entry, -1);
  EXPECT_EQ(c.Lookup({3, 4, 9}, 1500).entry, -1);
  EXPECT_NE(a, b);
  EXPECT_EQ(c.Evict(1000), 300);
  EXPECT_EQ(c.tokens(), 0);
  EXPECT_EQ(c.Evict(1), 0);
}

TEST(KvPrefixCacheTest, EntriesOlderThanATimeToLiveGo) {
  KvPrefixCache c;
  c.Insert({1}, 600, 100, 1.0);
  c.Insert({2}, 600, 200, 5.0);
  c.Insert({3}, 600, 400, 9.0);
  EXPECT_EQ(c.EvictInsertedBefore(5.0), 100);  // inserted at 5.0 stays
  EXPECT_EQ(c.EvictInsertedBefore(9.5), 600);
  EXPECT_EQ(c.size(), 0u);
}

TEST(KvPrefixCacheTest, ANewerEntryWithTheSameLastBlockWins) {
  KvPrefixCache c;
  const int64_t old_entry = c.Insert({7, 8}, 1024, 1100);
  const int64_t new_entry = c.Insert({7, 8}, 1024, 1200);
  EXPECT_EQ(c.Lookup({7, 8, 9}, 1500).entry, new_entry);
  // Evicting the older one leaves the newer one findable.
  EXPECT_EQ(c.Take(old_entry), 1100);
  EXPECT_EQ(c.Lookup({7, 8, 9}, 1500).entry, new_entry);
}

}  // namespace
}  // namespace tessera::kernelflume
