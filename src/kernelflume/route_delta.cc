#include "kernelflume/route_delta.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace tessera::kernelflume {

using core::Status;
using core::StatusOr;

RouteDelta::RouteDelta(std::shared_ptr<const RoutingTable> base)
    : base_(std::move(base)),
      nodes_(base_->nodes().begin(), base_->nodes().end()),
      next_range_id_(base_->next_range_id()) {}

namespace {

AttentionNodeInfo* FindIn(std::vector<AttentionNodeInfo>& nodes, int32_t id) {
  for (AttentionNodeInfo& n : nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

}  // namespace

Status RouteDelta::AddNode(const AttentionNodeInfo& node) {
  if (FindIn(nodes_, node.id) != nullptr) {
    return core::InvalidArgument(fmt::format(
        "attention node id: got {}, already in the routing table (ids are unique)", node.id));
  }
  if (node.capacity_tokens < 1) {
    return core::InvalidArgument(fmt::format(
        "attention node {}: capacity_tokens: got {}, must be >= 1", node.id, node.capacity_tokens));
  }
  nodes_.push_back(node);
  std::sort(nodes_.begin(), nodes_.end(),
            [](const AttentionNodeInfo& a, const AttentionNodeInfo& b) { return a.id < b.id; });
  return Status::Ok();
}

Status RouteDelta::SetNodeState(int32_t node_id, NodeState state) {
  AttentionNodeInfo* n = FindIn(nodes_, node_id);
  if (n == nullptr) {
    return core::NotFound(fmt::format("attention node {} is not in the routing table", node_id));
  }
  n->state = state;
  return Status::Ok();
}

const RequestRoute* RouteDelta::Find(uint64_t request_id) const {
  auto it = touched_.find(request_id);
  if (it != touched_.end()) return it->second.get();
  return base_->Find(request_id);
}

RequestRoute* RouteDelta::Mutable(uint64_t request_id) {
  auto it = touched_.find(request_id);
  if (it != touched_.end()) return it->second.get();
  const RequestRoute* r = base_->Find(request_id);
  if (r == nullptr) return nullptr;
  return touched_.emplace(request_id, std::make_unique<RequestRoute>(*r)).first->second.get();
}

Status RouteDelta::AddRequest(uint64_t request_id, int32_t node_id) {
  if (Find(request_id) != nullptr) {
    return core::InvalidArgument(
        fmt::format("request {} is already routed (request ids are unique)", request_id));
  }
  if (FindIn(nodes_, node_id) == nullptr) {
    return core::NotFound(fmt::format("request {}: attention node {} is not in the routing table",
                                      request_id, node_id));
  }
  auto r = std::make_unique<RequestRoute>();
  r->request_id = request_id;
  r->ranges.push_back(RouteRange{next_range_id_++, 0, kOpenTail, node_id});
  touched_[request_id] = std::move(r);
  return Status::Ok();
}

Status RouteDelta::SetLength(uint64_t request_id, int64_t length) {
  RequestRoute* r = Mutable(request_id);
  if (r == nullptr) return core::NotFound(fmt::format("request {} is not routed", request_id));
  if (length < r->length) {
    return core::InvalidArgument(
        fmt::format("request {}: length: got {}, below the recorded {} (a request never shrinks)",
                    request_id, length, r->length));
  }
  r->length = length;
  return Status::Ok();
}

Status RouteDelta::Reroute(uint64_t request_id, int32_t node_id) {
  if (FindIn(nodes_, node_id) == nullptr) {
    return core::NotFound(fmt::format("request {}: attention node {} is not in the routing table",
                                      request_id, node_id));
  }
  RequestRoute* r = Mutable(request_id);
  if (r == nullptr) return core::NotFound(fmt::format("request {} is not routed", request_id));
  RouteRange& tail = r->ranges.back();
  if (tail.start == r->length) {
    tail.node = node_id;  // nothing stored in it yet: move it
    tail.range_id = next_range_id_++;
    return Status::Ok();
  }
  tail.end = r->length;
  r->ranges.push_back(RouteRange{next_range_id_++, r->length, kOpenTail, node_id});
  return Status::Ok();
}

Status RouteDelta::ReopenPreviousRange(uint64_t request_id) {
  RequestRoute* r = Mutable(request_id);
  if (r == nullptr) return core::NotFound(fmt::format("request {} is not routed", request_id));
  const size_t n = r->ranges.size();
  if (n < 2 || r->ranges[n - 1].start != r->length || r->ranges[n - 2].end != r->length) {
    return core::FailedPrecondition(fmt::format(
        "request {}: its tail is not an empty tail opened at the end of the range before it",
        request_id));
  }
  r->ranges.pop_back();
  r->ranges.back().end = kOpenTail;
  return Status::Ok();
}

Status RouteDelta::RemoveRequest(uint64_t request_id) {
  if (Find(request_id) == nullptr) {
    return core::NotFound(fmt::format("request {} is not routed", request_id));
  }
  touched_[request_id] = nullptr;
  return Status::Ok();
}

StatusOr<uint64_t> RouteDelta::MoveRange(uint64_t request_id, uint64_t range_id, int32_t node_id,
                                         bool fresh_id) {
  if (FindIn(nodes_, node_id) == nullptr) {
    return core::NotFound(fmt::format("request {}: attention node {} is not in the routing table",
                                      request_id, node_id));
  }
  RequestRoute* r = Mutable(request_id);
  if (r == nullptr) return core::NotFound(fmt::format("request {} is not routed", request_id));
  for (RouteRange& g : r->ranges) {
    if (g.range_id != range_id) continue;
    g.node = node_id;
    if (fresh_id) g.range_id = next_range_id_++;
    return g.range_id;
  }
  return core::NotFound(fmt::format("request {}: no range {}", request_id, range_id));
}

Status RouteDelta::RemoveNode(int32_t node_id) {
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [&](const AttentionNodeInfo& n) { return n.id == node_id; });
  if (it == nodes_.end()) {
    return core::NotFound(fmt::format("attention node {} is not in the routing table", node_id));
  }
  Status st = Status::Ok();
  auto check = [&](const RequestRoute& r) {
    for (const RouteRange& g : r.ranges) {
      if (st.ok() && g.node == node_id) {
        st = core::FailedPrecondition(fmt::format(
            "attention node {} still holds range {} of request {}: it cannot be removed", node_id,
            g.range_id, r.request_id));
      }
    }
  };
  base_->ForEachRequest([&](const RequestRoute& r) {
    if (touched_.count(r.request_id) == 0) check(r);
  });
  for (const auto& [id, edited] : touched_) {
    if (edited) check(*edited);
  }
  if (!st.ok()) return st;
  nodes_.erase(it);
  return Status::Ok();
}

StatusOr<std::shared_ptr<const RoutingTable>> RouteDelta::Build() {
  auto t = std::make_shared<RoutingTable>(base_->version() + 1, base_->range_tokens_max());
  t->next_range_id_ = next_range_id_;
  t->num_requests_ = base_->num_requests();
  t->buckets_ = base_->buckets_;
  t->nodes_ = nodes_;
  // Node tokens: carried over by id, then corrected for the touched requests.
  t->node_tokens_.assign(nodes_.size(), 0);
  for (size_t i = 0; i < nodes_.size(); ++i) t->node_tokens_[i] = base_->NodeTokens(nodes_[i].id);
  std::set<int32_t> touched_nodes;
  auto add_tokens = [&](const RequestRoute& r, int64_t sign) {
    for (const RouteRange& g : r.ranges) {
      const AttentionNodeInfo* n = t->FindNode(g.node);
      if (n == nullptr) continue;  // reported by ValidateRoute below
      t->node_tokens_[static_cast<size_t>(n - t->nodes_.data())] += sign * g.Tokens(r.length);
      touched_nodes.insert(g.node);
    }
  };
  std::map<size_t, std::vector<RoutingTable::Route>> buckets;
  for (auto& [id, edited] : touched_) {
    const size_t b = RoutingTable::BucketOf(id);
    auto [it, fresh] = buckets.try_emplace(b);
    if (fresh && base_->buckets_[b]) it->second = *base_->buckets_[b];
    std::vector<RoutingTable::Route>& list = it->second;
    auto pos = std::lower_bound(
        list.begin(), list.end(), id,
        [](const RoutingTable::Route& r, uint64_t v) { return r->request_id < v; });
    const bool present = pos != list.end() && (*pos)->request_id == id;
    if (present) {
      add_tokens(**pos, -1);
      if (edited) {
        *pos = std::make_shared<const RequestRoute>(*edited);
      } else {
        list.erase(pos);
        --t->num_requests_;
      }
    } else if (edited) {
      pos = list.insert(pos, std::make_shared<const RequestRoute>(*edited));
      ++t->num_requests_;
    }
    if (edited) {
      add_tokens(*edited, +1);
      if (Status st = ValidateRoute(*t, *edited); !st.ok()) return st;
    }
  }
  for (auto& [b, list] : buckets) {
    t->buckets_[b] =
        list.empty() ? nullptr
                     : std::make_shared<const std::vector<RoutingTable::Route>>(std::move(list));
  }
  for (int32_t id : touched_nodes) {
    const AttentionNodeInfo* n = t->FindNode(id);
    if (n == nullptr) continue;
    const int64_t held = t->NodeTokens(id);
    if (held > n->capacity_tokens) {
      return core::FailedPrecondition(fmt::format(
          "routing table v{}: node {} would hold {} tokens, over its capacity_tokens {}",
          t->version(), id, held, n->capacity_tokens));
    }
  }
  // A node state change can break requests that were not touched (a tail on a node that is
  // now draining or lost): check the ranges on changed nodes.
  for (const AttentionNodeInfo& n : nodes_) {
    const AttentionNodeInfo* old = base_->FindNode(n.id);
    if (old != nullptr && old->state != n.state && n.state != NodeState::kActive) {
      Status st = Status::Ok();
      t->ForEachRequest([&](const RequestRoute& r) {
        if (st.ok()) st = ValidateRoute(*t, r);
      });
      if (!st.ok()) return st;
      break;
    }
  }
  // A removed node held no range (RemoveNode checked), so nothing else changes.
  return std::shared_ptr<const RoutingTable>(std::move(t));
}

}  // namespace tessera::kernelflume
