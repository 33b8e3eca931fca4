#include "runtime/paged_pool.h"

#include <fmt/format.h>

#include <utility>

#include "core/check.h"

namespace tessera::runtime {

core::StatusOr<std::unique_ptr<PagedPool>> PagedPool::Create(DeviceAllocator& allocator,
                                                             int64_t page_bytes, int64_t num_pages,
                                                             const std::string& name) {
  if (page_bytes < 1 || page_bytes > kMaxTensorBytes) {
    return core::InvalidArgument(fmt::format("paged pool {}: page_bytes = {}, must be in [1, {}]",
                                             name, page_bytes, kMaxTensorBytes));
  }
  if (num_pages < 1 || num_pages > kMaxPages) {
    return core::InvalidArgument(fmt::format("paged pool {}: num_pages = {}, must be in [1, {}]",
                                             name, num_pages, kMaxPages));
  }
  if (page_bytes > kMaxTensorBytes / num_pages) {
    return core::InvalidArgument(
        fmt::format("paged pool {}: {} pages of {} bytes exceed the largest tensor ({} bytes)",
                    name, num_pages, page_bytes, kMaxTensorBytes));
  }
  ASSIGN_OR_RETURN(DeviceTensor arena, allocator.Allocate(page_bytes * num_pages, name + ".pages",
                                                          TensorKind::kWorkspace));
  return std::unique_ptr<PagedPool>(new PagedPool(name, page_bytes, num_pages, std::move(arena)));
}

PagedPool::PagedPool(std::string name, int64_t page_bytes, int64_t num_pages, DeviceTensor arena)
    : name_(std::move(name)),
      page_bytes_(page_bytes),
      arena_(std::move(arena)),
      allocated_(static_cast<size_t>(num_pages), 0) {}

core::StatusOr<std::vector<int32_t>> PagedPool::AllocatePages(int64_t n) {
  if (n < 0) {
    return core::InvalidArgument(
        fmt::format("paged pool {}: asked for {} pages, must be >= 0", name_, n));
  }
  if (n > free_pages()) {
    return core::Infeasible(fmt::format("paged pool {}: need {} pages, {} of {} free", name_, n,
                                        free_pages(), num_pages()));
  }
  std::vector<int32_t> pages;
  pages.reserve(static_cast<size_t>(n));
  for (int32_t p = lowest_free_; static_cast<int64_t>(pages.size()) < n; ++p) {
    if (allocated_[p] == 0) {
      allocated_[p] = 1;
      pages.push_back(p);
    }
  }
  if (n > 0) {
    lowest_free_ = pages.back() + 1;
    while (lowest_free_ < num_pages() && allocated_[lowest_free_] != 0) ++lowest_free_;
  }
  used_pages_ += n;
  if (used_pages_ > peak_used_pages_) peak_used_pages_ = used_pages_;
  return pages;
}

core::Status PagedPool::FreePages(std::span<const int32_t> pages) {
  // Check everything first (all or nothing): in range, allocated, listed once. Pages seen are
  // marked 2 and unmarked again when a later one is bad.
  for (size_t i = 0; i < pages.size(); ++i) {
    const int32_t p = pages[i];
    core::Status bad;
    if (p < 0 || p >= num_pages()) {
      bad = core::InvalidArgument(
          fmt::format("paged pool {}: page {} out of range [0, {})", name_, p, num_pages()));
    } else if (allocated_[p] != 1) {
      bad = core::InvalidArgument(
          fmt::format("paged pool {}: page {} is {}", name_, p,
                      allocated_[p] == 0 ? "not allocated" : "listed twice in one free"));
    }
    if (!bad.ok()) {
      for (size_t j = 0; j < i; ++j) allocated_[pages[j]] = 1;
      return bad;
    }
    allocated_[p] = 2;
  }
  for (int32_t p : pages) {
    allocated_[p] = 0;
    if (p < lowest_free_) lowest_free_ = p;
  }
  used_pages_ -= static_cast<int64_t>(pages.size());
  return core::Status::Ok();
}

char* PagedPool::page_data(int32_t page) {
  CHECK(page >= 0 && page < num_pages()) << "page " << page << " of " << num_pages();
  return static_cast<char*>(arena_.data()) + static_cast<int64_t>(page) * page_bytes_;
}

const char* PagedPool::page_data(int32_t page) const {
  CHECK(page >= 0 && page < num_pages()) << "page " << page << " of " << num_pages();
  return static_cast<const char*>(arena_.data()) + static_cast<int64_t>(page) * page_bytes_;
}

}  // namespace tessera::runtime
