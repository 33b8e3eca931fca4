#include "kernelflume/routing_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

namespace tessera::kernelflume {

const char* NodeStateName(NodeState state) {
  switch (state) {
    case NodeState::kActive:
      return "active";
    case NodeState::kDraining:
      return "draining";
    case NodeState::kLost:
      return "lost";
  }
  return "?";
}

RoutingTable::RoutingTable(uint64_t version, int64_t range_tokens_max)
    : version_(version), range_tokens_max_(range_tokens_max) {}

const AttentionNodeInfo* RoutingTable::FindNode(int32_t id) const {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), id,
                             [](const AttentionNodeInfo& n, int32_t v) { return n.id < v; });
  return it != nodes_.end() && it->id == id ? &*it : nullptr;
}

int64_t RoutingTable::NodeTokens(int32_t id) const {
  const AttentionNodeInfo* n = FindNode(id);
  return n == nullptr ? 0 : node_tokens_[static_cast<size_t>(n - nodes_.data())];
}

RoutingTable::Route RoutingTable::FindShared(uint64_t request_id) const {
  const Bucket& b = buckets_[BucketOf(request_id)];
  if (!b) return nullptr;
  auto it = std::lower_bound(b->begin(), b->end(), request_id,
                             [](const Route& r, uint64_t v) { return r->request_id < v; });
  return it != b->end() && (*it)->request_id == request_id ? *it : nullptr;
}

const RequestRoute* RoutingTable::Find(uint64_t request_id) const {
  return FindShared(request_id).get();
}

namespace {

using core::Status;

Status Broken(const RoutingTable& t, const std::string& what) {
  return core::FailedPrecondition(fmt::format("routing table v{}: {}", t.version(), what));
}

// The per-request rules; adds the request's tokens per node to `tokens` (indexed like nodes).
Status ValidateRequest(const RoutingTable& t, const RequestRoute& r,
                       std::unordered_set<uint64_t>* range_ids, std::vector<int64_t>* tokens) {
  const std::string who = fmt::format("request {}", r.request_id);
  if (r.ranges.empty()) return Broken(t, who + ": has no range (every request has an open tail)");
  if (r.length < 0) return Broken(t, fmt::format("{}: length {} is negative", who, r.length));
  int64_t expect_start = 0;
  for (size_t i = 0; i < r.ranges.size(); ++i) {
    const RouteRange& g = r.ranges[i];
    const bool last = i + 1 == r.ranges.size();
    if (g.start != expect_start) {
      return Broken(t,
                    fmt::format("{}: range {} starts at {} but {} ({})", who, g.range_id, g.start,
                                i == 0 ? "the first range must start at 0"
                                       : fmt::format("the previous range ends at {}", expect_start),
                                "ranges must be contiguous from 0"));
    }
    if (g.open() != last) {
      return Broken(t, last ? fmt::format("{}: last range {} is sealed at {} (exactly one open "
                                          "tail, the last range)",
                                          who, g.range_id, g.end)
                            : fmt::format("{}: range {} is open but not last (exactly one open "
                                          "tail, the last range)",
                                          who, g.range_id));
    }
    if (!g.open() && g.end <= g.start) {
      return Broken(t, fmt::format("{}: sealed range {} is [{}, {}) (sealed ranges hold >= 1 "
                                   "token)",
                                   who, g.range_id, g.start, g.end));
    }
    if (g.open() && g.start > r.length) {
      return Broken(t, fmt::format("{}: tail range {} starts at {} beyond the length {}", who,
                                   g.range_id, g.start, r.length));
    }
    const int64_t n = g.Tokens(r.length);
    if (n > t.range_tokens_max()) {
      return Broken(t, fmt::format("{}: range {} holds {} tokens, more than range_tokens_max {}",
                                   who, g.range_id, n, t.range_tokens_max()));
    }
    if (range_ids != nullptr && !range_ids->insert(g.range_id).second) {
      return Broken(
          t, fmt::format("{}: range id {} is used twice (range ids are unique)", who, g.range_id));
    }
    if (g.range_id >= t.next_range_id()) {
      return Broken(t, fmt::format("{}: range id {} is not below next_range_id {}", who, g.range_id,
                                   t.next_range_id()));
    }
    const AttentionNodeInfo* node = t.FindNode(g.node);
    if (node == nullptr) {
      return Broken(t, fmt::format("{}: range {} is on node {}, which is not in the table", who,
                                   g.range_id, g.node));
    }
    if (node->state == NodeState::kLost) {
      return Broken(
          t, fmt::format("{}: range {} is on node {}, which is lost", who, g.range_id, g.node));
    }
    if (g.open() && node->state != NodeState::kActive) {
      return Broken(t, fmt::format("{}: tail range {} is on node {}, which is {} (tails go to "
                                   "active nodes)",
                                   who, g.range_id, g.node, NodeStateName(node->state)));
    }
    if (tokens != nullptr) (*tokens)[static_cast<size_t>(node - t.nodes().data())] += n;
    expect_start = g.open() ? r.length : g.end;
  }
  return Status::Ok();
}

}  // namespace

Status ValidateRoute(const RoutingTable& t, const RequestRoute& r) {
  return ValidateRequest(t, r, nullptr, nullptr);
}

Status Validate(const RoutingTable& t) {
  if (t.version() < 1) return Broken(t, "version must be >= 1");
  if (t.range_tokens_max() < 1) {
    return Broken(t, fmt::format("range_tokens_max {} must be >= 1", t.range_tokens_max()));
  }
  const auto nodes = t.nodes();
  if (t.node_tokens().size() != nodes.size()) {
    return Broken(t, "node_tokens and nodes differ in size");
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0 && nodes[i].id <= nodes[i - 1].id) {
      return Broken(
          t, fmt::format("node id {} appears twice or out of order (ids are unique)", nodes[i].id));
    }
    if (nodes[i].capacity_tokens < 1) {
      return Broken(t, fmt::format("node {}: capacity_tokens {} must be >= 1", nodes[i].id,
                                   nodes[i].capacity_tokens));
    }
  }
  std::unordered_set<uint64_t> range_ids;
  std::vector<int64_t> tokens(nodes.size(), 0);
  Status st = Status::Ok();
  size_t count = 0;
  t.ForEachRequest([&](const RequestRoute& r) {
    ++count;
    if (st.ok()) st = ValidateRequest(t, r, &range_ids, &tokens);
  });
  if (!st.ok()) return st;
  if (count != t.num_requests()) {
    return Broken(t,
                  fmt::format("num_requests {} but {} routes are stored", t.num_requests(), count));
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (tokens[i] > nodes[i].capacity_tokens) {
      return Broken(t, fmt::format("node {} holds {} tokens, over its capacity_tokens {}",
                                   nodes[i].id, tokens[i], nodes[i].capacity_tokens));
    }
    if (tokens[i] != t.node_tokens()[i]) {
      return Broken(t, fmt::format("node {}: node_tokens says {} but its ranges hold {}",
                                   nodes[i].id, t.node_tokens()[i], tokens[i]));
    }
  }
  return Status::Ok();
}

std::shared_ptr<const RoutingTable> AssembleRoutingTable(uint64_t version, int64_t range_tokens_max,
                                                         std::vector<AttentionNodeInfo> nodes,
                                                         std::vector<int64_t> node_tokens,
                                                         std::vector<RequestRoute> requests) {
  auto t = std::make_shared<RoutingTable>(version, range_tokens_max);
  t->nodes_ = std::move(nodes);
  t->node_tokens_ = std::move(node_tokens);
  std::array<std::vector<RoutingTable::Route>, RoutingTable::kNumBuckets> lists;
  for (RequestRoute& r : requests) {
    for (const RouteRange& g : r.ranges) {
      t->next_range_id_ = std::max(t->next_range_id_, g.range_id + 1);
    }
    lists[RoutingTable::BucketOf(r.request_id)].push_back(
        std::make_shared<const RequestRoute>(std::move(r)));
  }
  for (size_t b = 0; b < lists.size(); ++b) {
    std::sort(lists[b].begin(), lists[b].end(),
              [](const auto& x, const auto& y) { return x->request_id < y->request_id; });
    t->num_requests_ += lists[b].size();
    if (!lists[b].empty()) {
      t->buckets_[b] =
          std::make_shared<const std::vector<RoutingTable::Route>>(std::move(lists[b]));
    }
  }
  return t;
}

}  // namespace tessera::kernelflume
