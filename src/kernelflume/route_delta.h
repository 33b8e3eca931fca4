// RouteDelta: builds routing-table version v+1 from version v by a few edits (join a node,
// drain it, remove it, add a request, re-route its tail, move a range, drop it), copying only what
// the edits touch (see routing_table.h for the sharing). Build() checks the invariants the edits
// can break -- the touched requests' rules and the touched nodes' capacity -- so a valid base and a
// successful Build give a valid table (Validate re-checks everything; tests use it).
//
// Edits fail with InvalidArgument/NotFound naming the request or node and leave the delta
// unchanged; Build fails with FailedPrecondition naming the broken invariant.
// Thread-safety: one thread; the base table is shared read-only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "core/status.h"
#include "kernelflume/routing_table.h"

namespace tessera::kernelflume {

class RouteDelta {
 public:
  explicit RouteDelta(std::shared_ptr<const RoutingTable> base);

  // A new attention node (id unused, capacity >= 1).
  [[nodiscard]] core::Status AddNode(const AttentionNodeInfo& node);
  [[nodiscard]] core::Status SetNodeState(int32_t node_id, NodeState state);
  // A new request of length 0 with its open tail on `node_id`.
  [[nodiscard]] core::Status AddRequest(uint64_t request_id, int32_t node_id);
  // Records the request's current length (>= the recorded one): its tail grows.
  [[nodiscard]] core::Status SetLength(uint64_t request_id, int64_t length);
  // Seals the tail at the request's recorded length and opens a new tail there on `node_id`;
  // an empty tail (start == length) moves to `node_id` instead.
  [[nodiscard]] core::Status Reroute(uint64_t request_id, int32_t node_id);
  // Undoes a Reroute that opened an empty tail: drops that tail and reopens the range before it
  // (which ended where the tail starts). FailedPrecondition when the tail holds tokens or has no
  // predecessor ending at its start.
  [[nodiscard]] core::Status ReopenPreviousRange(uint64_t request_id);
  [[nodiscard]] core::Status RemoveRequest(uint64_t request_id);
  // Puts range `range_id` of the request on `node_id`, keeping its positions: under the same
  // id (a migration: the target holds a copy of the sealed range) or, with fresh_id, under a
  // new id (a range lost with its node, to be re-prefilled there). Returns the range's id.
  core::StatusOr<uint64_t> MoveRange(uint64_t request_id, uint64_t range_id, int32_t node_id,
                                     bool fresh_id);
  // Removes a node that holds no range of any request (a drained node retiring); scans the
  // base table's requests (rare).
  [[nodiscard]] core::Status RemoveNode(int32_t node_id);

  // The request as edited so far (nullptr when absent).
  const RequestRoute* Find(uint64_t request_id) const;
  // Version base+1 with the edits.
  core::StatusOr<std::shared_ptr<const RoutingTable>> Build();

 private:
  RequestRoute* Mutable(uint64_t request_id);

  std::shared_ptr<const RoutingTable> base_;
  std::vector<AttentionNodeInfo> nodes_;
  uint64_t next_range_id_;
  // Touched requests: the edited route, or nullopt-like removal (nullptr).
  std::map<uint64_t, std::unique_ptr<RequestRoute>> touched_;
};

}  // namespace tessera::kernelflume
