#include "kernelflume/range_kv_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace tessera::kernelflume {

using core::Status;

RangeKvStore::RangeKvStore(const AttentionShape& shape, int32_t page_tokens)
    : shape_(shape),
      page_tokens_(page_tokens),
      block_floats_(int64_t{shape.num_kv_heads} * page_tokens * shape.head_dim) {}

Status CheckKvCapacity(int64_t capacity_tokens, int64_t page_tokens) {
  if (page_tokens < 1) {
    return core::InvalidArgument(fmt::format("page_tokens: got {}, must be >= 1", page_tokens));
  }
  const int64_t most = page_tokens * runtime::PagedPool::kMaxPages;
  if (capacity_tokens < 1 || capacity_tokens > most) {
    return core::InvalidArgument(fmt::format(
        "capacity_tokens: got {}, must be in [1, {}] (at most {} pages of page_tokens {})",
        capacity_tokens, most, runtime::PagedPool::kMaxPages, page_tokens));
  }
  return Status::Ok();
}

core::StatusOr<std::unique_ptr<RangeKvStore>> RangeKvStore::Create(const AttentionShape& shape,
                                                                   int64_t capacity_tokens,
                                                                   int32_t page_tokens) {
  RETURN_IF_ERROR(CheckKvCapacity(capacity_tokens, page_tokens));
  if (shape.num_layers < 1 || shape.num_kv_heads < 1 || shape.head_dim < 1) {
    return core::InvalidArgument(
        fmt::format("attention shape: layers {}, kv heads {}, head dim {}: each must be >= 1",
                    shape.num_layers, shape.num_kv_heads, shape.head_dim));
  }
  std::unique_ptr<RangeKvStore> s(new RangeKvStore(shape, page_tokens));
  const int64_t page_bytes =
      int64_t{shape.num_layers} * 2 * s->block_floats_ * static_cast<int64_t>(sizeof(float));
  const int64_t num_pages = (capacity_tokens + page_tokens - 1) / page_tokens;
  auto pool = runtime::PagedPool::Create(s->allocator_, page_bytes, num_pages, "kv");
  if (!pool.ok()) return pool.status().WithPrefix("attention node KV pool");
  s->pool_ = std::move(*pool);
  return s;
}

Status RangeKvStore::Append(uint64_t request_id, uint64_t range_id, int32_t layer, int64_t offset,
                            int64_t num_tokens, const float* k, const float* v) {
  if (layer < 0 || layer >= shape_.num_layers || num_tokens < 1) {
    return core::InvalidArgument(
        fmt::format("append to range {}: layer {} (model has {}), {} tokens (must be >= 1)",
                    range_id, layer, shape_.num_layers, num_tokens));
  }
  auto it = ranges_.find(range_id);
  if (it == ranges_.end()) {
    if (offset != 0) {
      return core::InvalidArgument(
          fmt::format("append to range {}: unknown range, offset {} (a range starts with offset 0)",
                      range_id, offset));
    }
    Range r;
    r.request_id = request_id;
    r.length.assign(shape_.num_layers, 0);
    it = ranges_.emplace(range_id, std::move(r)).first;
  }
  Range& r = it->second;
  if (r.request_id != request_id) {
    return core::InvalidArgument(fmt::format("append to range {}: it belongs to request {}, not {}",
                                             range_id, r.request_id, request_id));
  }
  if (offset > r.length[layer] || offset < 0) {
    return core::InvalidArgument(fmt::format(
        "append to range {} layer {}: offset {}, but it holds {} tokens (appends come in order)",
        range_id, layer, offset, r.length[layer]));
  }
  const int64_t end = offset + num_tokens;
  const int64_t pages_needed = (end + page_tokens_ - 1) / page_tokens_;
  if (pages_needed > static_cast<int64_t>(r.pages.size())) {
    auto got = pool_->AllocatePages(pages_needed - static_cast<int64_t>(r.pages.size()));
    if (!got.ok()) {
      if (r.pages.empty() && offset == 0 && layer == 0) ranges_.erase(it);
      return got.status().WithPrefix(fmt::format("append to range {}", range_id));
    }
    r.pages.insert(r.pages.end(), got->begin(), got->end());
  }
  const int64_t hkv = shape_.num_kv_heads, d = shape_.head_dim, p = page_tokens_;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t pos = offset + t;
    float* page = PageFloats(r.pages[pos / p]);
    float* kb = page + (int64_t{layer} * 2) * block_floats_;
    float* vb = kb + block_floats_;
    for (int64_t g = 0; g < hkv; ++g) {
      std::memcpy(kb + (g * p + pos % p) * d, k + (t * hkv + g) * d, d * sizeof(float));
      std::memcpy(vb + (g * p + pos % p) * d, v + (t * hkv + g) * d, d * sizeof(float));
    }
  }
  r.length[layer] = end;
  return Status::Ok();
}

Status RangeKvStore::AddSegments(uint64_t request_id, uint64_t range_id, int32_t layer,
                                 int64_t tokens, std::vector<kernels::KvSegment>& out) const {
  auto it = ranges_.find(range_id);
  const int64_t have =
      it == ranges_.end() || layer < 0 || layer >= shape_.num_layers ? 0 : it->second.length[layer];
  if (it != ranges_.end() && it->second.request_id != request_id) {
    return core::InvalidArgument(fmt::format("query of range {}: it belongs to request {}, not {}",
                                             range_id, it->second.request_id, request_id));
  }
  if (tokens > have || tokens < 0) {
    return core::FailedPrecondition(
        fmt::format("range {} layer {} holds {} tokens, {} needed", range_id, layer, have, tokens));
  }
  const int64_t p = page_tokens_;
  for (int64_t first = 0; first < tokens; first += p) {
    const float* page = PageFloats(it->second.pages[first / p]);
    const float* kb = page + (int64_t{layer} * 2) * block_floats_;
    kernels::KvSegment s;
    s.k = kb;
    s.v = kb + block_floats_;
    s.len = std::min(p, tokens - first);
    s.token_stride = shape_.head_dim;
    s.head_stride = p * shape_.head_dim;
    out.push_back(s);
  }
  return Status::Ok();
}

int64_t RangeKvStore::Length(uint64_t range_id, int32_t layer) const {
  auto it = ranges_.find(range_id);
  if (it == ranges_.end() || layer < 0 || layer >= shape_.num_layers) return 0;
  return it->second.length[layer];
}

bool RangeKvStore::FreeRange(uint64_t request_id, uint64_t range_id) {
  auto it = ranges_.find(range_id);
  if (it == ranges_.end() || it->second.request_id != request_id) return false;
  CHECK(pool_->FreePages(it->second.pages).ok());
  ranges_.erase(it);
  return true;
}

int64_t RangeKvStore::RangeTokens(uint64_t range_id) const {
  auto it = ranges_.find(range_id);
  if (it == ranges_.end()) return 0;
  return *std::max_element(it->second.length.begin(), it->second.length.end());
}

core::StatusOr<RangeKvStore::RangePages> RangeKvStore::Export(uint64_t request_id,
                                                              uint64_t range_id) const {
  auto it = ranges_.find(range_id);
  if (it == ranges_.end() || it->second.request_id != request_id) {
    return core::NotFound(
        fmt::format("export of range {} of request {}: not held here", range_id, request_id));
  }
  const Range& r = it->second;
  for (int64_t len : r.length) {
    if (len != r.length[0]) {
      return core::FailedPrecondition(
          fmt::format("export of range {}: its layers hold {} and {} tokens (not sealed)", range_id,
                      r.length[0], len));
    }
  }
  const int64_t pages = (r.length[0] + page_tokens_ - 1) / page_tokens_;
  return RangePages{r.length[0], std::vector<int32_t>(r.pages.begin(), r.pages.begin() + pages)};
}

Status RangeKvStore::ImportRange(
    uint64_t request_id, uint64_t range_id, int64_t tokens,
    const std::function<Status(size_t index, std::span<std::byte> page)>& fill) {
  if (ranges_.count(range_id) != 0) {
    return core::FailedPrecondition(fmt::format("import of range {}: already held here", range_id));
  }
  if (tokens < 1) {
    return core::InvalidArgument(
        fmt::format("import of range {}: {} tokens (must be >= 1)", range_id, tokens));
  }
  auto got = pool_->AllocatePages((tokens + page_tokens_ - 1) / page_tokens_);
  if (!got.ok()) return got.status().WithPrefix(fmt::format("import of range {}", range_id));
  for (size_t i = 0; i < got->size(); ++i) {
    std::span<std::byte> page(reinterpret_cast<std::byte*>(pool_->page_data((*got)[i])),
                              static_cast<size_t>(pool_->page_bytes()));
    if (Status st = fill(i, page); !st.ok()) {
      CHECK(pool_->FreePages(*got).ok());
      return st.WithPrefix(fmt::format("import of range {}", range_id));
    }
  }
  Range r;
  r.request_id = request_id;
  r.length.assign(shape_.num_layers, tokens);
  r.pages = std::move(*got);
  ranges_.emplace(range_id, std::move(r));
  return Status::Ok();
}

std::span<std::byte> RangeKvStore::PoolBytes() {
  return {reinterpret_cast<std::byte*>(pool_->page_data(0)),
          static_cast<size_t>(pool_->page_bytes() * pool_->num_pages())};
}

int64_t RangeKvStore::Free(uint64_t request_id) {
  int64_t n = 0;
  for (auto it = ranges_.begin(); it != ranges_.end();) {
    if (it->second.request_id == request_id) {
      CHECK(pool_->FreePages(it->second.pages).ok());
      it = ranges_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

}  // namespace tessera::kernelflume
