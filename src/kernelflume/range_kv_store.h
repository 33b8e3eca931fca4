// RangeKvStore: an attention node's KV cache -- the token ranges it holds, each in fixed pages
// of page_tokens tokens from one runtime::PagedPool (no allocation per step).
//
// A page holds, for every layer l, K then V of page_tokens tokens, head-major:
//   K[l][g][t][d] at ((l * 2 + 0) * Hkv + g) * P * D + t * D + d   (V with 1 instead of 0)
// so a page is one kernels::KvSegment per layer (token_stride D, head_stride P * D) and the
// decode-attention kernel reads each head's keys contiguously.
// Ranges are created by their first append (offset 0) and grow by appends at their current
// length, per layer (a layer's append for a step comes after the same step's earlier layers);
// an append at an offset below a layer's length replaces that layer's tokens from the offset
// on (a step retried after a node failure re-sends what it had appended); a range's pages are
// allocated as its longest layer needs them. A sealed range (every layer the same length) can
// be exported (its page ids, for a peer's one-sided read of the pool) and imported whole on
// another node (ImportRange fills freshly allocated pages through a callback).
// Errors: an append past the range's current length, to a range of another request, or a
// full pool (Infeasible naming the pages) leaves the store unchanged; reading more tokens than
// a layer holds is FailedPrecondition (the caller waits for the append in flight).
// Thread-safety: one thread at a time (the node's progress thread).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/status.h"
#include "kernelflume/protocol.h"
#include "kernels/decode_attention.h"
#include "runtime/device_allocator.h"
#include "runtime/paged_pool.h"

namespace tessera::kernelflume {

// OK when a node of `capacity_tokens` in pages of `page_tokens` can exist: both >= 1 and at most
// runtime::PagedPool::kMaxPages pages; else InvalidArgument naming capacity_tokens or
// page_tokens, the value and the limit. Checked before a node joins (attn-node, the cluster).
core::Status CheckKvCapacity(int64_t capacity_tokens, int64_t page_tokens);

class RangeKvStore {
 public:
  static core::StatusOr<std::unique_ptr<RangeKvStore>> Create(const AttentionShape& shape,
                                                              int64_t capacity_tokens,
                                                              int32_t page_tokens);

  // Appends T tokens' k and v, each (T, Hkv, D) token-major, at `offset` of range `range_id`.
  [[nodiscard]] core::Status Append(uint64_t request_id, uint64_t range_id, int32_t layer,
                                    int64_t offset, int64_t num_tokens, const float* k,
                                    const float* v);
  // Adds the segments of the first `tokens` tokens of the range at `layer` to `out`.
  [[nodiscard]] core::Status AddSegments(uint64_t request_id, uint64_t range_id, int32_t layer,
                                         int64_t tokens,
                                         std::vector<kernels::KvSegment>& out) const;
  // Tokens stored in the range at `layer` (0 for an unknown range).
  int64_t Length(uint64_t range_id, int32_t layer) const;
  // Drops every range of the request; returns how many.
  int64_t Free(uint64_t request_id);
  // Drops one range of the request; false when it is not here.
  bool FreeRange(uint64_t request_id, uint64_t range_id);

  struct RangePages {
    int64_t tokens = 0;
    std::vector<int32_t> pages;  // in token order
  };
  // The pages of a sealed range: NotFound for an unknown range or another request's,
  // FailedPrecondition when its layers differ in length (still being appended to).
  core::StatusOr<RangePages> Export(uint64_t request_id, uint64_t range_id) const;
  // Creates range `range_id` of `tokens` tokens in every layer from whole pages: allocates
  // ceil(tokens / page_tokens) pages and calls fill(i, page bytes) for the i-th; on any
  // failure (a full pool, fill's error, the id taken) the store is unchanged.
  [[nodiscard]] core::Status ImportRange(
      uint64_t request_id, uint64_t range_id, int64_t tokens,
      const std::function<core::Status(size_t index, std::span<std::byte> page)>& fill);
  // The pool's memory, for registering it with a transport (pages at page_bytes() strides).
  std::span<std::byte> PoolBytes();
  int64_t page_bytes() const { return pool_->page_bytes(); }
  int64_t RangeTokens(uint64_t range_id) const;  // the longest layer's tokens; 0 if unknown

  int64_t num_ranges() const { return static_cast<int64_t>(ranges_.size()); }
  int64_t used_pages() const { return pool_->used_pages(); }
  int64_t num_pages() const { return pool_->num_pages(); }
  int32_t page_tokens() const { return page_tokens_; }

 private:
  struct Range {
    uint64_t request_id = 0;
    std::vector<int64_t> length;  // per layer
    std::vector<int32_t> pages;
  };
  RangeKvStore(const AttentionShape& shape, int32_t page_tokens);
  float* PageFloats(int32_t page) { return reinterpret_cast<float*>(pool_->page_data(page)); }
  const float* PageFloats(int32_t page) const {
    return reinterpret_cast<const float*>(pool_->page_data(page));
  }

  AttentionShape shape_;
  int32_t page_tokens_;
  int64_t block_floats_;  // one K or V block of a layer in a page: Hkv * P * D
  runtime::HeapDeviceAllocator allocator_;
  std::unique_ptr<runtime::PagedPool> pool_;
  std::map<uint64_t, Range> ranges_;
};

}  // namespace tessera::kernelflume
