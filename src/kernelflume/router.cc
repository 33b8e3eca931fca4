#include "kernelflume/router.h"

#include <fmt/format.h>

#include "kernelflume/route_delta.h"

namespace tessera::kernelflume {

using core::Status;
using core::StatusOr;

Router::Router(RouteStore& store, RouterOptions options) : store_(store), options_(options) {}

int64_t Router::LiveTokens(int32_t node_id) const {
  auto it = live_tokens_.find(node_id);
  return it == live_tokens_.end() ? 0 : it->second;
}

Status Router::AddNode(const AttentionNodeInfo& node) {
  RouteDelta delta(store_.Current());
  if (Status st = delta.AddNode(node); !st.ok()) return st;
  auto table = delta.Build();
  if (!table.ok()) return table.status();
  if (Status st = store_.Install(*table); !st.ok()) return st;
  live_tokens_[node.id] = 0;
  return Status::Ok();
}

StatusOr<int32_t> Router::PickNode(const RoutingTable& table, int32_t after_node,
                                   int64_t need_tokens) const {
  const auto nodes = table.nodes();
  size_t first = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id > after_node) {
      first = i;
      break;
    }
  }
  int32_t best = -1;
  int64_t best_live = 0;
  std::string free_list;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const AttentionNodeInfo& n = nodes[(first + k) % nodes.size()];
    if (n.state != NodeState::kActive) continue;
    const int64_t live = LiveTokens(n.id);
    free_list +=
        fmt::format("{}node {}: {}", free_list.empty() ? "" : ", ", n.id, n.capacity_tokens - live);
    if (live + need_tokens > n.capacity_tokens) continue;
    if (best < 0 || live < best_live) {
      best = n.id;
      best_live = live;
    }
  }
  if (best < 0) {
    return core::Infeasible(
        fmt::format("attention nodes full: need {} tokens on one active node; free tokens: {}",
                    need_tokens, free_list.empty() ? "no active node" : free_list));
  }
  return best;
}

Status Router::AddRequest(uint64_t request_id) {
  std::shared_ptr<const RoutingTable> cur = store_.Current();
  auto node = PickNode(*cur, -1, 0);
  if (!node.ok()) return node.status();
  RouteDelta delta(cur);
  if (Status st = delta.AddRequest(request_id, *node); !st.ok()) return st;
  auto table = delta.Build();
  if (!table.ok()) return table.status();
  if (Status st = store_.Install(*table); !st.ok()) return st;
  lengths_[request_id] = 0;
  return Status::Ok();
}

StatusOr<std::shared_ptr<const RoutingTable>> Router::PrepareStep(uint64_t request_id,
                                                                  int64_t length, int64_t num_new) {
  std::shared_ptr<const RoutingTable> cur = store_.Current();
  const RequestRoute* route = cur->Find(request_id);
  if (route == nullptr) return core::NotFound(fmt::format("request {} is not routed", request_id));
  if (num_new < 1 || num_new > options_.range_tokens_max) {
    return core::InvalidArgument(
        fmt::format("request {}: step of {} tokens: must be in [1, range_tokens_max {}]",
                    request_id, num_new, options_.range_tokens_max));
  }
  auto len_it = lengths_.find(request_id);
  if (length != len_it->second) {
    return core::InvalidArgument(
        fmt::format("request {}: step starts at position {}, but {} tokens are stored", request_id,
                    length, len_it->second));
  }
  const RouteRange& tail = route->tail();
  const int64_t in_tail = length - tail.start;
  const AttentionNodeInfo* tail_node = cur->FindNode(tail.node);
  const bool too_long = in_tail + num_new > options_.range_tokens_max;
  const bool too_full = LiveTokens(tail.node) + num_new > tail_node->capacity_tokens;
  const bool not_active = tail_node->state != NodeState::kActive;
  const bool periodic = options_.reroute_every > 0 && in_tail >= options_.reroute_every;
  std::shared_ptr<const RoutingTable> use = cur;
  if (too_long || too_full || not_active || periodic) {
    auto node = PickNode(*cur, tail.node, num_new);
    if (!node.ok()) return node.status().WithPrefix(fmt::format("request {}", request_id));
    RouteDelta delta(cur);
    if (Status st = delta.SetLength(request_id, length); !st.ok()) return st;
    if (Status st = delta.Reroute(request_id, *node); !st.ok()) return st;
    auto table = delta.Build();
    if (!table.ok()) return table.status();
    if (Status st = store_.Install(*table); !st.ok()) return st;
    use = *table;
    ++reroutes_;
  }
  live_tokens_[use->Find(request_id)->tail().node] += num_new;
  len_it->second = length + num_new;
  return use;
}

Status Router::RemoveRequest(uint64_t request_id) {
  std::shared_ptr<const RoutingTable> cur = store_.Current();
  const RequestRoute* route = cur->Find(request_id);
  if (route == nullptr) return core::NotFound(fmt::format("request {} is not routed", request_id));
  const int64_t length = lengths_[request_id];
  for (const RouteRange& g : route->ranges) live_tokens_[g.node] -= g.Tokens(length);
  RouteDelta delta(cur);
  if (Status st = delta.RemoveRequest(request_id); !st.ok()) return st;
  auto table = delta.Build();
  if (!table.ok()) return table.status();
  if (Status st = store_.Install(*table); !st.ok()) return st;
  lengths_.erase(request_id);
  return Status::Ok();
}

}  // namespace tessera::kernelflume
