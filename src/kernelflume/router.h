// Router: KernelFlume's placement policy over the route store. It adds attention nodes and
// requests, and before each step of a request decides whether the request's open tail must move
// (re-route = seal the tail at the step's first position and open a new tail elsewhere), then
// installs the new version; the step uses the returned snapshot for all of its layers.
//
// The tail moves when the step's new tokens would take it past range_tokens_max, or its node
// past capacity_tokens (live tokens are counted in whole pages of the node's page_tokens, per
// range, as the node allocates them), or (reroute_every = k > 0) once k tokens have gone into it --
// the last is for tests and benchmarks that exercise many ranges. The new tail goes to the active
// node with the fewest live tokens, scanning cyclically from the node after the current tail's (so
// re-routes walk the nodes), among those with room; ties go to the node with fewer open tails
// (requests opened together spread over the nodes). Live tokens per node are counted here as
// steps are prepared (the snapshot's per-node counts use each request's length at its last
// re-route, which is never more).
//
// Elasticity (each edit one new version, at the requests' token boundaries: a tail is sealed at
// the request's length as counted here, which includes a step already prepared):
//   SpreadTails  after a node joins: moves tails onto it (seals them where they are, opens new
//                ones there; no KV copy) until it holds its share of the open tails, taking
//                from the node with the most live tokens the request whose last step was
//                prepared longest ago (its next step comes soonest);
//   Drain        moves every tail off a node and marks it draining (refused for the last active
//                node); its sealed ranges leave by MoveRange (migration) or with their requests;
//   MoveRange    repoints a sealed range to another node (after the target copied it);
//   Fence        a lost node: every range it held is given a fresh id on a surviving node (to be
//                re-prefilled there; returned) and the node is marked lost;
//   Retire       removes a node that holds nothing;
//   RollbackStep forgets a prepared step that failed, so it can be prepared again; when a
//                re-route (a join's SpreadTails) sealed the tail after that step and the new
//                tail is still empty, the re-route is undone (the tail goes back to the range
//                before it, if that node is active), since the step's tokens belong there.
// Errors: a step larger than range_tokens_max is InvalidArgument; no active node with room is
// Infeasible naming the tokens needed and the nodes' free tokens.
// Thread-safety: one thread at a time (the weight node's scheduler).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/status.h"
#include "kernelflume/route_store.h"

namespace tessera::kernelflume {

class RouteDelta;

struct RouterOptions {
  int64_t range_tokens_max = 16384;
  int64_t reroute_every = 0;  // tokens; 0 = only when needed
};

class Router {
 public:
  Router(RouteStore& store, RouterOptions options);

  [[nodiscard]] core::Status AddNode(const AttentionNodeInfo& node);
  // What AddNode(node) would return now, without adding it (a join is answered first and the
  // node made routable after, so no message to it can overtake the answer).
  [[nodiscard]] core::Status CheckNewNode(const AttentionNodeInfo& node) const;
  // Routes a new request (length 0); its tail goes to the emptiest active node.
  [[nodiscard]] core::Status AddRequest(uint64_t request_id);
  // Before appending `num_new` tokens at positions [length, length + num_new): re-routes if
  // needed and returns the snapshot the step reads.
  core::StatusOr<std::shared_ptr<const RoutingTable>> PrepareStep(uint64_t request_id,
                                                                  int64_t length, int64_t num_new);
  // Drops a finished request; its tokens leave the live counts.
  [[nodiscard]] core::Status RemoveRequest(uint64_t request_id);

  // Returns the requests whose tails moved.
  core::StatusOr<std::vector<uint64_t>> SpreadTails(int32_t node_id);
  [[nodiscard]] core::Status Drain(int32_t node_id);
  [[nodiscard]] core::Status MoveRange(uint64_t request_id, uint64_t range_id, int32_t node_id);
  struct LostRange {
    uint64_t request_id = 0;
    RouteRange range;  // the replacement: fresh id, same positions, on a surviving node
  };
  core::StatusOr<std::vector<LostRange>> Fence(int32_t node_id);
  [[nodiscard]] core::Status Retire(int32_t node_id);
  [[nodiscard]] core::Status RollbackStep(uint64_t request_id, int64_t length);
  // Tokens stored for the request (including a prepared step); -1 when unknown.
  int64_t Length(uint64_t request_id) const;

  int64_t LiveTokens(int32_t node_id) const;
  int64_t Tails(int32_t node_id) const;  // open tails on the node
  int64_t reroutes() const { return reroutes_; }

 private:
  core::StatusOr<int32_t> PickNode(const RoutingTable& table, int32_t after_node,
                                   int64_t need_tokens, int32_t exclude = -1) const;
  [[nodiscard]] core::Status Publish(RouteDelta& delta);
  void MoveTail(int32_t from, int32_t to);
  // RollbackStep's repair of a tail re-routed after a failed step (see there).
  [[nodiscard]] core::Status UndoEmptyReroute(uint64_t request_id);
  std::chrono::steady_clock::time_point LastStep(uint64_t request_id) const;
  // Tokens a range of `tokens` takes on the node: whole pages of its page_tokens.
  int64_t Rounded(int32_t node_id, int64_t tokens) const;

  RouteStore& store_;
  RouterOptions options_;
  std::map<int32_t, int64_t> live_tokens_;
  std::map<uint64_t, int64_t> lengths_;  // per request, tokens appended so far
  std::map<int32_t, int32_t> page_tokens_;
  std::map<uint64_t, std::chrono::steady_clock::time_point> last_step_;  // per request
  std::map<int32_t, int64_t> tails_;  // open tails per node (PickNode's tie-break)
  std::set<int32_t> down_;            // fenced nodes (lost, whether or not re-homed)
  int64_t reroutes_ = 0;
};

}  // namespace tessera::kernelflume
