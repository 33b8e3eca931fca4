// WeightNode's elastic operations: fencing a lost node, epoch reclamation, migration, drain,
// and the bookkeeping of a request's recovery (see weight_node.h).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "kernelflume/weight_node.h"

namespace tessera::kernelflume {

using core::Status;

double WeightNode::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void WeightNode::LogLocked(std::string kind, int32_t node_id, std::string detail) {
  events_.push_back(ElasticEvent{Now(), std::move(kind), node_id, std::move(detail)});
}

std::vector<ElasticEvent> WeightNode::events() const {
  std::lock_guard lock(mu_);
  return events_;
}

NodeTimes WeightNode::node_times(int32_t node_id) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node_id);
  return it == nodes_.end() ? NodeTimes{} : it->second.times;
}

std::vector<int32_t> WeightNode::active_nodes() const {
  std::lock_guard lock(mu_);
  std::vector<int32_t> ids;
  for (const auto& [id, n] : nodes_) {
    if (!n.lost) ids.push_back(id);
  }
  return ids;
}

std::vector<WeightNode::NodeLoad> WeightNode::PoolLoad() const {
  std::lock_guard lock(mu_);
  std::vector<NodeLoad> out;
  const std::shared_ptr<const RoutingTable> cur = store_.Current();
  for (const auto& [id, n] : nodes_) {
    const AttentionNodeInfo* info = cur->FindNode(id);
    if (n.lost || info == nullptr || info->state != NodeState::kActive) continue;
    out.push_back(NodeLoad{id, info->capacity_tokens, router_.LiveTokens(id), n.busy_us / 1e6});
  }
  return out;
}

void WeightNode::NoteDecision(const std::string& kind, int32_t node_id, const std::string& why) {
  std::lock_guard lock(mu_);
  LogLocked(kind, node_id, why);
}

bool WeightNode::IsGone(int32_t node_id) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node_id);
  return it != nodes_.end() && it->second.lost;
}

double WeightNode::PartialDeadlineLocked() const {
  if (wait_s_.size() < 64) return options_.reply_timeout_s;
  std::vector<double> w = wait_s_;
  const size_t k = static_cast<size_t>(0.99 * static_cast<double>(w.size() - 1));
  std::nth_element(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(k), w.end());
  return std::min(options_.reply_timeout_s, std::max(options_.min_partial_deadline_s, 20 * w[k]));
}

uint64_t WeightNode::NextStepId() {
  std::lock_guard lock(mu_);
  return next_step_id_++;
}

void WeightNode::FenceLocked(int32_t node_id, const std::string& why) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end() || it->second.lost) return;
  it->second.lost = true;
  it->second.lost_reason = why;
  LogLocked("lost", node_id, why);
  // Close the endpoint so a slow node's late replies never arrive (Close does not call our
  // failure handler).
  (void)transport_->Close(it->second.peer);
  auto lost = router_.Fence(node_id);
  if (!lost.ok()) {
    // No surviving node can take the ranges: every request on it fails with this reason.
    LogLocked("fence", node_id, "failed: " + lost.status().message());
    const std::shared_ptr<const RoutingTable> cur = store_.Current();
    cur->ForEachRequest([&](const RequestRoute& r) {
      for (const RouteRange& g : r.ranges) {
        if (g.node == node_id) {
          request_errors_[r.request_id] = core::Unavailable(
              fmt::format("attention node {} was lost ({}) and its ranges cannot be re-homed: {}",
                          node_id, why, lost.status().message()));
        }
      }
    });
    return;
  }
  for (const Router::LostRange& l : *lost) {
    refills_[l.request_id].push_back(l.range);
    refill_lost_[l.request_id].insert(node_id);
  }
  for (auto& [r, list] : refills_) {
    std::sort(list.begin(), list.end(),
              [](const RouteRange& a, const RouteRange& b) { return a.start < b.start; });
  }
  // Frees owed by the lost node are moot.
  std::erase_if(pending_frees_, [&](const PendingFree& f) { return f.node == node_id; });
  LogLocked("fence", node_id, fmt::format("{} ranges re-homed for re-prefill", lost->size()));
}

void WeightNode::FenceNode(int32_t node_id, const std::string& why) {
  std::lock_guard lock(mu_);
  FenceLocked(node_id, why);
  cv_.notify_all();
}

void WeightNode::EnterStep(uint64_t version) {
  std::lock_guard lock(mu_);
  inflight_versions_.insert(version);
}

void WeightNode::ExitStep(uint64_t version) {
  std::vector<std::pair<comm::PeerId, FreeRangeMsg>> sends;
  {
    std::lock_guard lock(mu_);
    auto it = inflight_versions_.find(version);
    if (it != inflight_versions_.end()) inflight_versions_.erase(it);
    ReclaimLocked(sends);
  }
  for (const auto& [peer, m] : sends) {
    const std::vector<std::byte> header = Encode(m);
    (void)transport_->Send(peer, kFreeRange, header, {});
  }
}

void WeightNode::ReclaimLocked(std::vector<std::pair<comm::PeerId, FreeRangeMsg>>& sends) {
  const uint64_t oldest = inflight_versions_.empty() ? UINT64_MAX : *inflight_versions_.begin();
  std::erase_if(pending_frees_, [&](const PendingFree& f) {
    if (f.version > oldest) return false;
    auto n = nodes_.find(f.node);
    if (n != nodes_.end() && !n->second.lost) sends.emplace_back(n->second.peer, f.msg);
    return true;
  });
}

core::StatusOr<std::vector<RouteRange>> WeightNode::BeginRecovery(uint64_t request, int64_t pos0,
                                                                  bool step_prepared) {
  std::lock_guard lock(mu_);
  if (auto e = request_errors_.find(request); e != request_errors_.end() && !e->second.ok()) {
    return e->second;
  }
  if (step_prepared) RETURN_IF_ERROR(router_.RollbackStep(request, pos0));
  std::vector<RouteRange> todo;
  if (auto it = refills_.find(request); it != refills_.end()) {
    todo = std::move(it->second);
    refills_.erase(it);
  }
  refill_lost_.erase(request);
  return todo;
}

void WeightNode::NoteRefilled(uint64_t request, const RouteRange& range, double seconds) {
  std::lock_guard lock(mu_);
  LogLocked("refill", range.node,
            fmt::format("request {} range {} [{}, {}) in {:.3f} s", request, range.range_id,
                        range.start, range.end, seconds));
}

void WeightNode::RequeueRefill(uint64_t request, std::span<const RouteRange> ranges) {
  std::lock_guard lock(mu_);
  const RequestRoute* r = store_.Current()->Find(request);
  if (r == nullptr) return;
  std::vector<RouteRange>& list = refills_[request];
  for (const RouteRange& g : ranges) {
    const bool still_there =
        std::any_of(r->ranges.begin(), r->ranges.end(),
                    [&](const RouteRange& x) { return x.range_id == g.range_id; });
    const bool queued = std::any_of(list.begin(), list.end(),
                                    [&](const RouteRange& x) { return x.range_id == g.range_id; });
    if (still_there && !queued) list.push_back(g);
  }
  std::sort(list.begin(), list.end(),
            [](const RouteRange& a, const RouteRange& b) { return a.start < b.start; });
}

void WeightNode::OnRangeExport(std::span<const std::byte> header) {
  auto m = DecodeRangeExport(header);
  if (!m.ok()) return;
  std::lock_guard lock(mu_);
  auto it = migrations_.find(m->migration_id);
  if (it == migrations_.end()) return;
  it->second.exported = true;
  if (m->code != 0) {
    it->second.done = true;
    it->second.status = Status(static_cast<core::StatusCode>(m->code), m->message);
  }
  it->second.exported_msg = std::move(*m);
  cv_.notify_all();
}

void WeightNode::OnMigrated(std::span<const std::byte> header) {
  auto m = DecodeMigrated(header);
  if (!m.ok()) return;
  std::lock_guard lock(mu_);
  auto it = migrations_.find(m->migration_id);
  if (it == migrations_.end()) return;
  it->second.done = true;
  if (m->code != 0) it->second.status = Status(static_cast<core::StatusCode>(m->code), m->message);
  cv_.notify_all();
}

Status WeightNode::MigrateRange(uint64_t request_id, uint64_t range_id, int32_t target) {
  int32_t source = 0;
  uint64_t id = 0;
  int64_t tokens = 0;
  {
    std::lock_guard lock(mu_);
    const std::shared_ptr<const RoutingTable> cur = store_.Current();
    const RequestRoute* r = cur->Find(request_id);
    const RouteRange* g = nullptr;
    if (r != nullptr) {
      for (const RouteRange& x : r->ranges) {
        if (x.range_id == range_id) g = &x;
      }
    }
    if (g == nullptr || g->open()) {
      return core::FailedPrecondition(fmt::format(
          "migrate: range {} of request {} is {}", range_id, request_id,
          g == nullptr ? "not in the routing table" : "the open tail (only sealed ranges move)"));
    }
    const AttentionNodeInfo* t = cur->FindNode(target);
    if (t == nullptr || t->state != NodeState::kActive || target == g->node) {
      return core::FailedPrecondition(
          fmt::format("migrate: target node {} is not an active node other than the source {}",
                      target, g->node));
    }
    source = g->node;
    tokens = g->end - g->start;
    id = next_migration_id_++;
    migrations_[id] = Migration{};
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.migrate_timeout_s);
  auto wait_for = [&](auto done, int32_t node) -> Status {
    std::unique_lock lock(mu_);
    while (!done(migrations_[id])) {
      if (nodes_.at(node).lost) {
        return core::Unavailable(fmt::format("migrate: attention node {} was lost", node));
      }
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        return core::DeadlineExceeded(
            fmt::format("migrate: attention node {} did not answer within {} s", node,
                        options_.migrate_timeout_s));
      }
    }
    return migrations_[id].status;
  };
  auto finish = [&](Status st) {
    std::lock_guard lock(mu_);
    migrations_.erase(id);
    return st.ok()
               ? st
               : st.WithPrefix(fmt::format("migrating range {} of request {} from node {} to {}",
                                           range_id, request_id, source, target));
  };
  const std::vector<std::byte> ask = Encode(ExportMsg{id, request_id, range_id});
  if (Status st = SendTo(source, kExport, ask, {}); !st.ok()) return finish(st);
  if (Status st = wait_for([](const Migration& m) { return m.exported; }, source); !st.ok()) {
    if (st.code() == core::StatusCode::kNotFound) {
      // A range sealed right after a step opened it: that step's first append is still on its
      // way to the source (a drain seals tails while steps run). The caller retries.
      st = core::FailedPrecondition(fmt::format(
          "the source holds none of the range's {} tokens yet (its first appends are in flight: "
          "{})",
          tokens, st.message()));
    }
    return finish(st);
  }
  RangeExportMsg where;
  {
    std::lock_guard lock(mu_);
    where = migrations_[id].exported_msg;
  }
  if (where.tokens != tokens) {
    return finish(core::FailedPrecondition(
        fmt::format("the source holds {} of the range's {} tokens (its last appends are in flight)",
                    where.tokens, tokens)));
  }
  const std::vector<std::byte> fwd = Encode(where);
  if (Status st = SendTo(target, kRangeExport, fwd, {}); !st.ok()) return finish(st);
  if (Status st = wait_for([](const Migration& m) { return m.done; }, target); !st.ok()) {
    return finish(st);
  }
  std::vector<std::pair<comm::PeerId, FreeRangeMsg>> sends;
  {
    std::lock_guard lock(mu_);
    if (Status st = router_.MoveRange(request_id, range_id, target); !st.ok()) {
      migrations_.erase(id);
      return st;  // the request finished meanwhile: its ranges are freed with it
    }
    pending_frees_.push_back(
        PendingFree{store_.Current()->version(), source, FreeRangeMsg{request_id, range_id}});
    LogLocked("migrate", target,
              fmt::format("request {} range {} ({} tokens) from node {}", request_id, range_id,
                          tokens, source));
    ReclaimLocked(sends);
    migrations_.erase(id);
    cv_.notify_all();
  }
  for (const auto& [peer, m] : sends) {
    const std::vector<std::byte> header = Encode(m);
    (void)transport_->Send(peer, kFreeRange, header, {});
  }
  return Status::Ok();
}

Status WeightNode::DrainNode(int32_t node_id, double timeout_s) {
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(node_id);
    if (it == nodes_.end() || it->second.lost) {
      return core::NotFound(fmt::format("drain: attention node {} is not active", node_id));
    }
    RETURN_IF_ERROR(router_.Drain(node_id));
    LogLocked("drain", node_id, "tails moved away");
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    // Sealed ranges still on the node: migrate each to the active node with the fewest tokens.
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    int32_t target = -1;
    {
      std::lock_guard lock(mu_);
      const std::shared_ptr<const RoutingTable> cur = store_.Current();
      cur->ForEachRequest([&](const RequestRoute& r) {
        for (const RouteRange& g : r.ranges) {
          if (g.node == node_id) ranges.emplace_back(r.request_id, g.range_id);
        }
      });
      int64_t best = INT64_MAX;
      for (const AttentionNodeInfo& n : cur->nodes()) {
        if (n.state == NodeState::kActive && router_.LiveTokens(n.id) < best) {
          best = router_.LiveTokens(n.id);
          target = n.id;
        }
      }
      const bool frees_owed = std::any_of(pending_frees_.begin(), pending_frees_.end(),
                                          [&](const PendingFree& f) { return f.node == node_id; });
      if (ranges.empty() && !frees_owed) {
        // Retired only once no step reads an older version that still points at it.
        RETURN_IF_ERROR(router_.Retire(node_id));
        NodeEntry& e = nodes_.at(node_id);
        e.retired = true;
        e.lost = true;
        e.lost_reason = "retired after a drain";
        LogLocked("retire", node_id, "");
        (void)transport_->Send(e.peer, kShutdown, {}, {});
        cv_.notify_all();
        return Status::Ok();
      }
    }
    if (target < 0) return core::Unavailable("drain: no active node to migrate to");
    bool retry = ranges.empty();  // only frees owed: wait for the old steps to finish
    for (const auto& [request, range] : ranges) {
      Status st = MigrateRange(request, range, target);
      // A range whose request ended, or whose last appends are still in flight, is retried.
      if (!st.ok() && st.code() != core::StatusCode::kFailedPrecondition) return st;
      retry = retry || !st.ok();
    }
    if (retry) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (std::chrono::steady_clock::now() > deadline) {
      return core::DeadlineExceeded(
          fmt::format("drain: attention node {} still holds {} ranges after {} s", node_id,
                      ranges.size(), timeout_s));
    }
  }
}

}  // namespace tessera::kernelflume
