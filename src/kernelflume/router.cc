#include "kernelflume/router.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

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
  page_tokens_[node.id] = std::max(node.page_tokens, 1);
  return Status::Ok();
}

Status Router::CheckNewNode(const AttentionNodeInfo& node) const {
  RouteDelta delta(store_.Current());
  if (Status st = delta.AddNode(node); !st.ok()) return st;
  return delta.Build().status();
}

StatusOr<int32_t> Router::PickNode(const RoutingTable& table, int32_t after_node,
                                   int64_t need_tokens, int32_t exclude) const {
  const auto nodes = table.nodes();
  size_t first = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id > after_node) {
      first = i;
      break;
    }
  }
  int32_t best = -1;
  int64_t best_live = 0, best_tails = 0;
  std::string free_list;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const AttentionNodeInfo& n = nodes[(first + k) % nodes.size()];
    if (n.state != NodeState::kActive || n.id == exclude || down_.count(n.id) != 0) continue;
    const int64_t live = LiveTokens(n.id);
    free_list +=
        fmt::format("{}node {}: {}", free_list.empty() ? "" : ", ", n.id, n.capacity_tokens - live);
    if (live + Rounded(n.id, need_tokens) > n.capacity_tokens) continue;
    const int64_t tails = Tails(n.id);
    if (best < 0 || live < best_live || (live == best_live && tails < best_tails)) {
      best = n.id;
      best_live = live;
      best_tails = tails;
    }
  }
  if (free_list.empty()) {
    return core::Unavailable(
        "no active attention node (every node is lost, draining or retired); add a node");
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
  ++tails_[*node];
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
  const bool too_full =
      LiveTokens(tail.node) + Rounded(tail.node, in_tail + num_new) - Rounded(tail.node, in_tail) >
      tail_node->capacity_tokens;
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
    MoveTail(tail.node, *node);
  }
  const RouteRange& now = use->Find(request_id)->tail();
  live_tokens_[now.node] +=
      Rounded(now.node, length - now.start + num_new) - Rounded(now.node, length - now.start);
  len_it->second = length + num_new;
  last_step_[request_id] = std::chrono::steady_clock::now();
  return use;
}

Status Router::RemoveRequest(uint64_t request_id) {
  std::shared_ptr<const RoutingTable> cur = store_.Current();
  const RequestRoute* route = cur->Find(request_id);
  if (route == nullptr) return core::NotFound(fmt::format("request {} is not routed", request_id));
  const int64_t length = lengths_[request_id];
  for (const RouteRange& g : route->ranges)
    live_tokens_[g.node] -= Rounded(g.node, g.Tokens(length));
  --tails_[route->tail().node];
  RouteDelta delta(cur);
  if (Status st = delta.RemoveRequest(request_id); !st.ok()) return st;
  auto table = delta.Build();
  if (!table.ok()) return table.status();
  if (Status st = store_.Install(*table); !st.ok()) return st;
  lengths_.erase(request_id);
  last_step_.erase(request_id);
  return Status::Ok();
}

}  // namespace tessera::kernelflume

namespace tessera::kernelflume {

Status Router::Publish(RouteDelta& delta) {
  auto table = delta.Build();
  if (!table.ok()) return table.status();
  return store_.Install(*table);
}

int64_t Router::Rounded(int32_t node_id, int64_t tokens) const {
  auto it = page_tokens_.find(node_id);
  const int64_t p = it == page_tokens_.end() ? 1 : it->second;
  return (tokens + p - 1) / p * p;
}

std::chrono::steady_clock::time_point Router::LastStep(uint64_t request_id) const {
  auto it = last_step_.find(request_id);
  return it == last_step_.end() ? std::chrono::steady_clock::time_point{} : it->second;
}

int64_t Router::Tails(int32_t node_id) const {
  auto it = tails_.find(node_id);
  return it == tails_.end() ? 0 : it->second;
}

void Router::MoveTail(int32_t from, int32_t to) {
  --tails_[from];
  ++tails_[to];
}

int64_t Router::Length(uint64_t request_id) const {
  auto it = lengths_.find(request_id);
  return it == lengths_.end() ? -1 : it->second;
}

StatusOr<std::vector<uint64_t>> Router::SpreadTails(int32_t node_id) {
  std::shared_ptr<const RoutingTable> cur = store_.Current();
  const AttentionNodeInfo* target = cur->FindNode(node_id);
  if (target == nullptr || target->state != NodeState::kActive) {
    return core::NotFound(fmt::format("attention node {} is not active", node_id));
  }
  int64_t active = 0;
  for (const AttentionNodeInfo& n : cur->nodes()) active += n.state == NodeState::kActive;
  // Tails per node, then take from the node with the most until the new one has its share.
  std::map<int32_t, std::vector<uint64_t>> tails;
  cur->ForEachRequest([&](const RequestRoute& r) { tails[r.tail().node].push_back(r.request_id); });
  // Its share: ceil(tails / active nodes), taken from the nodes with the most live tokens
  // (their growth moves to the empty node).
  const int64_t total = static_cast<int64_t>(cur->num_requests());
  const int64_t share = (total + std::max<int64_t>(active, 1) - 1) / std::max<int64_t>(active, 1);
  std::vector<uint64_t> moved;
  RouteDelta delta(cur);
  while (static_cast<int64_t>(tails[node_id].size()) < share) {
    int32_t donor = -1;
    for (const auto& [n, list] : tails) {
      if (n == node_id || list.empty()) continue;
      if (donor < 0 || LiveTokens(n) > LiveTokens(donor)) donor = n;
    }
    if (donor < 0) break;
    // The donor's request whose last step was prepared longest ago: its next step (the first
    // token routed to the new node) is the one due soonest.
    std::vector<uint64_t>& list = tails[donor];
    auto pick = std::min_element(list.begin(), list.end(),
                                 [&](uint64_t a, uint64_t b) { return LastStep(a) < LastStep(b); });
    const uint64_t r = *pick;
    list.erase(pick);
    MoveTail(donor, node_id);
    if (Status st = delta.SetLength(r, lengths_[r]); !st.ok()) return st;
    if (Status st = delta.Reroute(r, node_id); !st.ok()) return st;
    tails[node_id].push_back(r);
    moved.push_back(r);
  }
  if (moved.empty()) return moved;
  if (Status st = Publish(delta); !st.ok()) return st;
  reroutes_ += static_cast<int64_t>(moved.size());
  return moved;
}

Status Router::Drain(int32_t node_id) {
  std::shared_ptr<const RoutingTable> cur = store_.Current();
  const AttentionNodeInfo* node = cur->FindNode(node_id);
  if (node == nullptr) return core::NotFound(fmt::format("attention node {} is unknown", node_id));
  if (node->state != NodeState::kActive) {
    return core::FailedPrecondition(
        fmt::format("attention node {} is already {}", node_id, NodeStateName(node->state)));
  }
  int64_t others = 0;
  for (const AttentionNodeInfo& n : cur->nodes()) {
    others += n.state == NodeState::kActive && n.id != node_id;
  }
  if (others == 0) {
    return core::FailedPrecondition(fmt::format(
        "attention node {} is the last active node: draining it would leave no node for new "
        "tokens (add a node first)",
        node_id));
  }
  RouteDelta delta(cur);
  Status st = Status::Ok();
  int64_t moved = 0;
  cur->ForEachRequest([&](const RequestRoute& r) {
    if (!st.ok() || r.tail().node != node_id) return;
    auto to = PickNode(*cur, node_id, 1, node_id);
    if (!to.ok()) {
      st = to.status();
      return;
    }
    st = delta.SetLength(r.request_id, lengths_[r.request_id]);
    if (st.ok()) st = delta.Reroute(r.request_id, *to);
    if (st.ok()) MoveTail(node_id, *to);
    ++moved;
  });
  if (st.ok()) st = delta.SetNodeState(node_id, NodeState::kDraining);
  if (st.ok()) st = Publish(delta);
  if (st.ok()) reroutes_ += moved;
  return st;
}

Status Router::MoveRange(uint64_t request_id, uint64_t range_id, int32_t node_id) {
  std::shared_ptr<const RoutingTable> cur = store_.Current();
  const RequestRoute* r = cur->Find(request_id);
  if (r == nullptr) return core::NotFound(fmt::format("request {} is not routed", request_id));
  auto g = std::find_if(r->ranges.begin(), r->ranges.end(),
                        [&](const RouteRange& x) { return x.range_id == range_id; });
  if (g == r->ranges.end() || g->open()) {
    return core::FailedPrecondition(
        fmt::format("request {}: range {} is {} (only sealed ranges migrate)", request_id, range_id,
                    g == r->ranges.end() ? "not in the routing table" : "the open tail"));
  }
  const int32_t from = g->node;
  const int64_t tokens = g->end - g->start;
  RouteDelta delta(cur);
  if (auto id = delta.MoveRange(request_id, range_id, node_id, false); !id.ok()) {
    return id.status();
  }
  RETURN_IF_ERROR(Publish(delta));
  live_tokens_[from] -= Rounded(from, tokens);
  live_tokens_[node_id] += Rounded(node_id, tokens);
  return Status::Ok();
}

StatusOr<std::vector<Router::LostRange>> Router::Fence(int32_t node_id) {
  std::shared_ptr<const RoutingTable> cur = store_.Current();
  const AttentionNodeInfo* node = cur->FindNode(node_id);
  if (node == nullptr) return core::NotFound(fmt::format("attention node {} is unknown", node_id));
  std::vector<LostRange> lost;
  if (node->state == NodeState::kLost) return lost;
  down_.insert(node_id);  // never picked again, even if its ranges cannot be re-homed
  RouteDelta delta(cur);
  Status st = Status::Ok();
  std::map<int32_t, int64_t> moved_tokens;
  cur->ForEachRequest([&](const RequestRoute& r) {
    const int64_t length = lengths_[r.request_id];
    for (const RouteRange& g : r.ranges) {
      if (!st.ok() || g.node != node_id) continue;
      const int64_t tokens = g.open() ? length - g.start : g.end - g.start;
      auto to = PickNode(*cur, node_id, tokens, node_id);
      if (!to.ok()) {
        st =
            to.status().WithPrefix(fmt::format("re-homing range {} of request {} from lost node {}",
                                               g.range_id, r.request_id, node_id));
        return;
      }
      auto id = delta.MoveRange(r.request_id, g.range_id, *to, true);
      if (!id.ok()) {
        st = id.status();
        return;
      }
      RouteRange moved = g;
      moved.range_id = *id;
      moved.node = *to;
      lost.push_back(LostRange{r.request_id, moved});
      if (g.open()) MoveTail(node_id, *to);
      moved_tokens[*to] += Rounded(*to, tokens);
      live_tokens_[*to] += Rounded(*to, tokens);  // PickNode sees it for the next range
    }
  });
  if (st.ok()) st = delta.SetNodeState(node_id, NodeState::kLost);
  if (st.ok()) st = Publish(delta);
  if (!st.ok()) {
    for (const auto& [n, t] : moved_tokens) live_tokens_[n] -= t;
    return st;
  }
  live_tokens_[node_id] = 0;
  return lost;
}

Status Router::Retire(int32_t node_id) {
  RouteDelta delta(store_.Current());
  RETURN_IF_ERROR(delta.RemoveNode(node_id));
  RETURN_IF_ERROR(Publish(delta));
  live_tokens_.erase(node_id);
  return Status::Ok();
}

Status Router::UndoEmptyReroute(uint64_t request_id) {
  std::shared_ptr<const RoutingTable> cur = store_.Current();
  const RequestRoute* r = cur->Find(request_id);
  if (r == nullptr || r->ranges.size() < 2) return Status::Ok();
  const RouteRange& prev = r->ranges[r->ranges.size() - 2];
  const AttentionNodeInfo* node = cur->FindNode(prev.node);
  if (node == nullptr || node->state != NodeState::kActive || down_.count(prev.node) != 0) {
    return Status::Ok();  // the range before cannot take the tail back: the caller refuses
  }
  const int32_t from = r->tail().node, to = prev.node;
  RouteDelta delta(cur);
  if (!delta.ReopenPreviousRange(request_id).ok()) return Status::Ok();
  RETURN_IF_ERROR(Publish(delta));
  MoveTail(from, to);
  return Status::Ok();
}

Status Router::RollbackStep(uint64_t request_id, int64_t length) {
  auto it = lengths_.find(request_id);
  if (it == lengths_.end())
    return core::NotFound(fmt::format("request {} is not routed", request_id));
  if (length > it->second || length < 0) {
    return core::InvalidArgument(
        fmt::format("request {}: roll back to {} of {} tokens", request_id, length, it->second));
  }
  const RequestRoute* r = store_.Current()->Find(request_id);
  if (r->tail().start > length && r->tail().start == it->second) {
    // A re-route (a joining node taking its share of the tails) sealed the tail after the failed
    // step and opened an empty one: undo it, so the retry appends where the step started.
    RETURN_IF_ERROR(UndoEmptyReroute(request_id));
    r = store_.Current()->Find(request_id);
  }
  if (r->tail().start > length) {
    return core::FailedPrecondition(fmt::format(
        "request {}: its tail was sealed after the failed step at position {} (a re-route raced "
        "the failure); the request cannot be retried",
        request_id, length));
  }
  const RouteRange& tail = r->tail();
  live_tokens_[tail.node] -=
      Rounded(tail.node, it->second - tail.start) - Rounded(tail.node, length - tail.start);
  it->second = length;
  return Status::Ok();
}

}  // namespace tessera::kernelflume
