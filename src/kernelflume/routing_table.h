// RoutingTable: which attention node holds which token range of each request's KV cache, as an
// immutable, versioned snapshot (KernelFlume's routing table).
//
// A request's KV is cut into ranges [start, end) of token positions, each held by one attention
// node; the last range is the open tail [start, length) that receives the request's new tokens.
// Invariants (Validate checks every one and names the broken one):
//   nodes      ids unique, capacity_tokens >= 1;
//   ranges     per request: at least one; sorted, contiguous from 0 (ranges[0].start == 0,
//              ranges[i].start == ranges[i-1].end), disjoint; sealed ranges non-empty; exactly
//              one open tail, the last one, with start <= length; every range holds at most
//              range_tokens_max tokens (a sealed one end - start, the tail length - start);
//              every range id unique in the table;
//   placement  every range's node exists; the tail's node is active (a draining node keeps its
//              sealed ranges and gets no tail; a lost node holds no range);
//   capacity   per node, the tokens of its ranges (at each request's recorded length) <=
//              capacity_tokens, and node_tokens() agrees with that sum.
// `length` is the request's length when the snapshot was built; the request keeps growing
// between snapshots in its own tail, and the router publishes a new version before the tail
// outgrows range_tokens_max or its node (kernelflume/router.h).
//
// Layout: requests sit in kNumBuckets buckets by id; each bucket and each RequestRoute is shared
// (shared_ptr to const) between versions, so a delta (route_delta.h) copies the bucket array,
// the touched buckets and the touched routes only: an install costs O(kNumBuckets + touched)
// rather than O(live requests). Nodes are few (< 100) and copied whole.
// Thread-safety: immutable after construction; share freely across threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::kernelflume {

enum class NodeState { kActive, kDraining, kLost };
const char* NodeStateName(NodeState state);

struct AttentionNodeInfo {
  int32_t id = 0;
  std::string endpoint;  // where it is reached, for messages and /admin ("127.0.0.1:4567")
  int64_t capacity_tokens = 0;
  NodeState state = NodeState::kActive;
  int32_t page_tokens = 1;  // the node allocates KV in pages of this many tokens, per range
};

inline constexpr int64_t kOpenTail = -1;

struct RouteRange {
  uint64_t range_id = 0;
  int64_t start = 0;        // first token position
  int64_t end = kOpenTail;  // one past the last position; kOpenTail for the open tail
  int32_t node = 0;
  bool open() const { return end == kOpenTail; }
  // Tokens held when the request is `length` long.
  int64_t Tokens(int64_t length) const { return (open() ? length : end) - start; }
};

struct RequestRoute {
  uint64_t request_id = 0;
  int64_t length = 0;              // tokens stored when the snapshot was built
  std::vector<RouteRange> ranges;  // sorted by start; the last is the open tail
  const RouteRange& tail() const { return ranges.back(); }
};

class RoutingTable {
 public:
  static constexpr size_t kNumBuckets = 64;
  using Route = std::shared_ptr<const RequestRoute>;
  using Bucket = std::shared_ptr<const std::vector<Route>>;  // sorted by request id

  // An empty version-`version` table.
  RoutingTable(uint64_t version, int64_t range_tokens_max);

  uint64_t version() const { return version_; }
  int64_t range_tokens_max() const { return range_tokens_max_; }
  uint64_t next_range_id() const { return next_range_id_; }
  size_t num_requests() const { return num_requests_; }

  std::span<const AttentionNodeInfo> nodes() const { return nodes_; }
  // The node with this id, or nullptr.
  const AttentionNodeInfo* FindNode(int32_t id) const;
  // Tokens held per node, in nodes() order.
  std::span<const int64_t> node_tokens() const { return node_tokens_; }
  int64_t NodeTokens(int32_t id) const;

  // The route of a request, or nullptr.
  const RequestRoute* Find(uint64_t request_id) const;
  Route FindShared(uint64_t request_id) const;
  // Calls fn(const RequestRoute&) for every request, by bucket then id.
  template <typename Fn>
  void ForEachRequest(Fn&& fn) const {
    for (const Bucket& b : buckets_) {
      if (b) {
        for (const Route& r : *b) fn(*r);
      }
    }
  }

  static size_t BucketOf(uint64_t request_id) { return request_id % kNumBuckets; }

 private:
  friend class RouteDelta;
  friend std::shared_ptr<const RoutingTable> AssembleRoutingTable(
      uint64_t version, int64_t range_tokens_max, std::vector<AttentionNodeInfo> nodes,
      std::vector<int64_t> node_tokens, std::vector<RequestRoute> requests);
  uint64_t version_;
  int64_t range_tokens_max_;
  uint64_t next_range_id_ = 1;
  size_t num_requests_ = 0;
  std::vector<AttentionNodeInfo> nodes_;  // sorted by id
  std::vector<int64_t> node_tokens_;      // parallel to nodes_
  std::array<Bucket, kNumBuckets> buckets_;
};

// Checks every invariant of the file comment; FailedPrecondition naming the version, the
// request or node and the broken rule, e.g. "routing table v7: request 12: range 3 starts at 40
// but the previous range ends at 32 (ranges must be contiguous from 0)".
[[nodiscard]] core::Status Validate(const RoutingTable& table);

// The per-request rules of Validate for one route against `table`'s nodes and limits (all but
// the table-wide uniqueness of range ids and the capacity sums): what a delta checks per
// touched request.
[[nodiscard]] core::Status ValidateRoute(const RoutingTable& table, const RequestRoute& route);

// Builds a table from parts WITHOUT checking anything: for tests of Validate and for tools
// that load a table to check it. Requests are bucketed; node_tokens is taken as given.
std::shared_ptr<const RoutingTable> AssembleRoutingTable(uint64_t version, int64_t range_tokens_max,
                                                         std::vector<AttentionNodeInfo> nodes,
                                                         std::vector<int64_t> node_tokens,
                                                         std::vector<RequestRoute> requests);

}  // namespace tessera::kernelflume
