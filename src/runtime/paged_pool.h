// PagedPool: fixed-size pages of device memory carved from one arena, handed out by page index
// to owners that grow and shrink in page steps: a KV cache's sequences (a block table per
// sequence lists its pages, as in paged attention) or training snapshot slots.
//
// The arena is one tensor (kind workspace) of page_bytes x num_pages taken from a
// DeviceAllocator when the pool is created and returned when it is destroyed, so the
// allocator's live and peak bytes count the whole pool whether its pages are used or not (as a
// serving engine reserves its KV pool up front). The pool keeps its own page accounting:
// used_pages(), free_pages(), peak_used_pages().
//
// Pages: AllocatePages(n) hands out the n lowest free page indices, ascending (deterministic,
// so a replay of the same calls gets the same pages); a page is page_bytes long at
// page_data(index), 64-byte aligned when page_bytes is a multiple of 64; contents are unspecified
// when handed out. FreePages returns pages to the pool. Misuse is an error, not a crash:
// allocating more pages than are free is Infeasible ("paged pool kv: need 5 pages, 3 of 16
// free") and freeing a page that is out of range, not allocated or listed twice is
// InvalidArgument; either way nothing changes.
//
// Bounds: page_bytes in [1, kMaxTensorBytes], num_pages in [1, kMaxPages] and their product
// at most kMaxTensorBytes (InvalidArgument naming the value otherwise).
// Lifetime: the allocator must outlive the pool. Thread-safety: one thread at a time (as the
// allocator).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/device_allocator.h"

namespace tessera::runtime {

class PagedPool {
 public:
  static constexpr int64_t kMaxPages = int64_t{1} << 24;

  // `name` names the pool in messages and its arena tensor ("<name>.pages").
  static core::StatusOr<std::unique_ptr<PagedPool>> Create(DeviceAllocator& allocator,
                                                           int64_t page_bytes, int64_t num_pages,
                                                           const std::string& name);
  PagedPool(const PagedPool&) = delete;
  PagedPool& operator=(const PagedPool&) = delete;

  const std::string& name() const { return name_; }
  int64_t page_bytes() const { return page_bytes_; }
  int64_t num_pages() const { return static_cast<int64_t>(allocated_.size()); }
  int64_t used_pages() const { return used_pages_; }
  int64_t free_pages() const { return num_pages() - used_pages_; }
  int64_t peak_used_pages() const { return peak_used_pages_; }
  // Pages needed to hold `bytes` (bytes >= 0): ceil(bytes / page_bytes).
  int64_t PagesFor(int64_t bytes) const { return (bytes + page_bytes_ - 1) / page_bytes_; }

  // The n (>= 0) lowest free pages, ascending; Infeasible when fewer are free.
  core::StatusOr<std::vector<int32_t>> AllocatePages(int64_t n);
  // Returns `pages` to the pool (all or nothing; see the file comment).
  core::Status FreePages(std::span<const int32_t> pages);
  bool IsAllocated(int32_t page) const {
    return page >= 0 && page < num_pages() && allocated_[page] != 0;
  }

  // The bytes of page `page` (0 <= page < num_pages(), CHECKed).
  char* page_data(int32_t page);
  const char* page_data(int32_t page) const;

 private:
  PagedPool(std::string name, int64_t page_bytes, int64_t num_pages, DeviceTensor arena);

  std::string name_;
  int64_t page_bytes_ = 0;
  DeviceTensor arena_;
  std::vector<uint8_t> allocated_;  // per page: 1 while handed out
  int32_t lowest_free_ = 0;         // no free page below this index
  int64_t used_pages_ = 0;
  int64_t peak_used_pages_ = 0;
};

}  // namespace tessera::runtime
