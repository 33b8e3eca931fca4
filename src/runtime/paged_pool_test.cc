// PagedPool against a plain reference (a set of free page indices) on seeded random sequences
// of allocations and frees, with every page's contents checked for cross-talk.
#include "runtime/paged_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "core/rng.h"

namespace tessera::runtime {
namespace {

TEST(PagedPoolTest, MatchesAReferenceOnRandomAllocationsAndFrees) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    core::Rng rng(seed);
    const int64_t page_bytes = 64 * (1 + static_cast<int64_t>(rng.Below(4)));
    const int64_t num_pages = 1 + static_cast<int64_t>(rng.Below(64));
    HeapDeviceAllocator alloc;
    auto pool = PagedPool::Create(alloc, page_bytes, num_pages, "kv");
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    PagedPool& p = **pool;
    EXPECT_EQ(alloc.live_bytes(), AlignBytes(page_bytes * num_pages));
    std::set<int32_t> ref_free;
    for (int32_t i = 0; i < num_pages; ++i) ref_free.insert(i);
    std::map<int, std::vector<int32_t>> owners;  // owner -> its pages
    int64_t ref_peak = 0;
    for (int step = 0; step < 200; ++step) {
      const int owner = static_cast<int>(rng.Below(8));
      if (rng.Below(3) != 0) {  // grow this owner
        const int64_t n = static_cast<int64_t>(rng.Below(10));
        auto got = p.AllocatePages(n);
        if (n > static_cast<int64_t>(ref_free.size())) {
          ASSERT_FALSE(got.ok());
          EXPECT_EQ(got.status().code(), core::StatusCode::kInfeasible);
          continue;
        }
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        std::vector<int32_t> want(ref_free.begin(), std::next(ref_free.begin(), n));
        EXPECT_EQ(*got, want) << "seed " << seed << " step " << step;
        for (int32_t page : want) {
          ref_free.erase(page);
          std::memset(p.page_data(page), owner + 1, static_cast<size_t>(page_bytes));
          owners[owner].push_back(page);
        }
      } else if (!owners[owner].empty()) {  // free a random suffix of this owner's pages
        std::vector<int32_t>& mine = owners[owner];
        const size_t keep = static_cast<size_t>(rng.Below(mine.size()));
        std::vector<int32_t> drop(mine.begin() + static_cast<long>(keep), mine.end());
        ASSERT_TRUE(p.FreePages(drop).ok());
        for (int32_t page : drop) ref_free.insert(page);
        mine.resize(keep);
      }
      const int64_t used = num_pages - static_cast<int64_t>(ref_free.size());
      ref_peak = std::max(ref_peak, used);
      ASSERT_EQ(p.used_pages(), used);
      ASSERT_EQ(p.peak_used_pages(), ref_peak);
    }
    // No page was handed to two owners: each still holds the byte its owner wrote.
    for (const auto& [owner, pages] : owners)
      for (int32_t page : pages) {
        ASSERT_TRUE(p.IsAllocated(page));
        for (int64_t b = 0; b < page_bytes; ++b)
          ASSERT_EQ(p.page_data(page)[b], static_cast<char>(owner + 1))
              << "seed " << seed << " page " << page;
      }
    pool->reset();
    EXPECT_EQ(alloc.live_bytes(), 0);
  }
}

TEST(PagedPoolTest, BadFreesChangeNothing) {
  HeapDeviceAllocator alloc;
  auto pool = PagedPool::Create(alloc, 128, 4, "snapshots");
  ASSERT_TRUE(pool.ok());
  auto pages = (*pool)->AllocatePages(2);
  ASSERT_TRUE(pages.ok());
  EXPECT_EQ(*pages, (std::vector<int32_t>{0, 1}));
  const std::vector<int32_t> twice{0, 1, 0}, unknown{1, 3}, out_of_range{0, 9};
  for (const auto* bad : {&twice, &unknown, &out_of_range}) {
    const core::Status st = (*pool)->FreePages(*bad);
    EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_EQ((*pool)->used_pages(), 2);
    EXPECT_TRUE((*pool)->IsAllocated(0) && (*pool)->IsAllocated(1));
  }
  EXPECT_NE((*pool)->FreePages(twice).message().find("listed twice"), std::string::npos);
  auto too_many = (*pool)->AllocatePages(3);
  EXPECT_EQ(too_many.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(too_many.status().message().find("need 3 pages, 2 of 4 free"), std::string::npos);
  EXPECT_TRUE((*pool)->FreePages(*pages).ok());
  EXPECT_EQ((*pool)->free_pages(), 4);
  EXPECT_EQ((*pool)->PagesFor(0), 0);
  EXPECT_EQ((*pool)->PagesFor(129), 2);
}

TEST(PagedPoolTest, RefusesBadSizesAndCountsAgainstTheBudget) {
  HeapDeviceAllocator alloc(4096);
  EXPECT_EQ(PagedPool::Create(alloc, 0, 4, "kv").status().code(),
            core::StatusCode::kInvalidArgument);
  EXPECT_EQ(PagedPool::Create(alloc, 64, 0, "kv").status().code(),
            core::StatusCode::kInvalidArgument);
  EXPECT_EQ(PagedPool::Create(alloc, kMaxTensorBytes, 2, "kv").status().code(),
            core::StatusCode::kInvalidArgument);
  // The arena is one allocation: a pool above the budget is refused by the allocator.
  EXPECT_EQ(PagedPool::Create(alloc, 1024, 5, "kv").status().code(), core::StatusCode::kInfeasible);
  auto pool = PagedPool::Create(alloc, 1024, 4, "kv");
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(alloc.live_bytes(), 4096);
}

}  // namespace
}  // namespace tessera::runtime
