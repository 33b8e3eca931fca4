#include "kernelflume/weight_node.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "kernelflume/disaggregated_attention.h"

namespace tessera::kernelflume {

using core::Status;

WeightNode::WeightNode(const AttentionShape& shape, const std::string& fingerprint,
                       const WeightNodeOptions& options)
    : shape_(shape),
      fingerprint_(fingerprint),
      options_(options),
      store_(options.router.range_tokens_max),
      router_(store_, options.router) {}

WeightNode::~WeightNode() { comm::DestroyTransport(transport_); }

core::StatusOr<std::unique_ptr<WeightNode>> WeightNode::Start(
    std::unique_ptr<comm::AmTransport> transport, const AttentionShape& shape,
    const std::string& fingerprint, const WeightNodeOptions& options) {
  if (options.router.range_tokens_max < 1) {
    return core::InvalidArgument(
        fmt::format("range_tokens: got {}, must be >= 1", options.router.range_tokens_max));
  }
  if (options.router.reroute_every < 0) {
    return core::InvalidArgument(
        fmt::format("reroute_every: got {}, must be >= 0", options.router.reroute_every));
  }
  if (options.refill_nice < 0 || options.refill_nice > 19) {
    return core::InvalidArgument(
        fmt::format("refill_nice: got {}, must be from 0 to 19", options.refill_nice));
  }
  std::unique_ptr<WeightNode> wn(new WeightNode(shape, fingerprint, options));
  WeightNode* self = wn.get();
  comm::AmTransport& t = *transport;
  wn->transport_ = std::move(transport);
  t.SetHandler(kJoin, [self](comm::PeerId from, auto header, auto) { self->OnJoin(from, header); });
  t.SetHandler(kPartial, [self](comm::PeerId, auto header, auto payload) {
    const BatchEntry one{kPartial, header, payload};
    self->OnPartials(std::span(&one, 1));
  });
  // A node's partials for one kBatch of queries (send_batch.h).
  t.SetHandler(kBatch, [self](comm::PeerId, auto header, auto payload) {
    auto entries = DecodeBatch(header, payload);
    if (!entries.ok()) return;  // not attributable; the waits time out naming the node
    std::erase_if(*entries, [](const BatchEntry& e) { return e.am_id != kPartial; });
    self->OnPartials(*entries);
  });
  t.SetHandler(kRangeExport,
               [self](comm::PeerId, auto header, auto) { self->OnRangeExport(header); });
  t.SetHandler(kMigrated, [self](comm::PeerId, auto header, auto) { self->OnMigrated(header); });
  t.SetFailureHandler([self](comm::PeerId peer, const Status& why) { self->OnFailure(peer, why); });
  if (Status st = t.Listen(options.listen_host, options.listen_port); !st.ok()) {
    return st.WithPrefix("weight node");
  }
  return wn;
}

void WeightNode::OnJoin(comm::PeerId from, std::span<const std::byte> header) {
  auto join = DecodeJoin(header);
  JoinReplyMsg reply;
  reply.shape = shape_;
  reply.fingerprint = fingerprint_;
  AttentionNodeInfo info;
  {
    std::lock_guard lock(mu_);
    if (!join.ok()) {
      reply.reason = join.status().message();
    } else if (!join->fingerprint.empty() && join->fingerprint != fingerprint_) {
      reply.reason = fmt::format(
          "attention node {}: model fingerprint {}, but the weight node serves {} (start the "
          "node for the same model)",
          join->node_id, join->fingerprint, fingerprint_);
    } else if (nodes_.count(join->node_id) != 0) {
      reply.reason =
          fmt::format("attention node id {} is already taken (ids are unique)", join->node_id);
    } else {
      info = {join->node_id, fmt::format("peer {}", from), join->capacity_tokens,
              NodeState::kActive, std::max(join->page_tokens, 1)};
      Status st = router_.CheckNewNode(info);
      reply.accepted = st.ok();
      if (!st.ok()) reply.reason = st.message();
    }
    if (!reply.accepted) {
      refusals_.push_back(reply.reason);
      cv_.notify_all();
    }
  }
  // The answer goes out before the node is routable: a decode step on another thread that
  // picks it sends its first append after this, and one sender's messages keep their order.
  // Joins run one at a time on this (the progress) thread, so the checks above still hold.
  const std::vector<std::byte> bytes = Encode(reply);
  (void)transport_->Send(from, kJoinReply, bytes, {});
  if (!reply.accepted) return;
  std::unique_lock lock(mu_);
  if (Status st = router_.AddNode(info); !st.ok()) {  // the table moved on; tell the node
    refusals_.push_back(st.message());
    LogLocked("join-failed", info.id, st.message());
    cv_.notify_all();
    lock.unlock();
    (void)transport_->Close(from);
    return;
  }
  NodeEntry e;
  e.peer = from;
  e.endpoint = info.endpoint;
  e.times.joined_s = Now();
  nodes_[info.id] = e;
  LogLocked("join", info.id, fmt::format("capacity {} tokens", info.capacity_tokens));
  if (options_.spread_tails_on_join) {
    auto moved = router_.SpreadTails(info.id);
    if (moved.ok() && !moved->empty()) {
      LogLocked("spread", info.id, fmt::format("{} tails moved here", moved->size()));
    }
  }
  cv_.notify_all();
}

void WeightNode::OnPartials(std::span<const BatchEntry> partials) {
  struct Delivery {
    PartialMsg msg;
    Partial partial;
  };
  std::vector<Delivery> ready;
  ready.reserve(partials.size());
  for (const BatchEntry& e : partials) {
    auto m = DecodePartial(e.header);
    if (!m.ok()) continue;  // not attributable to a request; the wait times out naming the node
    Partial p;
    p.node_id = m->node_id;
    if (m->code != 0) {
      p.status = Status(static_cast<core::StatusCode>(m->code), m->message);
    } else {
      const size_t tq_h = e.payload.size() / sizeof(float) / (shape_.head_dim + 1);
      p.status = CopyFloats(e.payload, tq_h * (shape_.head_dim + 1), "partial", p.o_lse);
    }
    ready.push_back(Delivery{std::move(*m), std::move(p)});
  }
  if (ready.empty()) return;
  std::lock_guard lock(mu_);
  for (Delivery& d : ready) {
    if (auto n = nodes_.find(d.msg.node_id); n != nodes_.end()) {
      n->second.busy_us += d.msg.compute_us;
    }
    if (d.msg.step < 0) {
      request_errors_.emplace(d.msg.request_id, d.partial.status);
    } else {
      mailbox_[Key{d.msg.request_id, d.msg.step, d.msg.layer, d.msg.node_id}] =
          std::move(d.partial);
    }
  }
  cv_.notify_all();
}

void WeightNode::OnFailure(comm::PeerId peer, const Status& why) {
  std::lock_guard lock(mu_);
  for (auto& [id, n] : nodes_) {
    if (n.peer == peer && !n.lost) FenceLocked(id, why.message());
  }
  cv_.notify_all();
}

Status WeightNode::WaitForNodes(int count, double timeout_s, const std::function<Status()>& abort) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::unique_lock lock(mu_);
  while (true) {
    int active = 0;
    for (const auto& [id, n] : nodes_) active += n.lost ? 0 : 1;
    if (active >= count) return Status::Ok();
    if (abort) {
      lock.unlock();
      Status st = abort();
      lock.lock();
      if (!st.ok()) return st;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string refused;
      for (const std::string& r : refusals_) refused += "; refused: " + r;
      return core::DeadlineExceeded(fmt::format("{} of {} attention nodes joined within {} s{}",
                                                active, count, timeout_s, refused));
    }
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

std::vector<std::string> WeightNode::refusals() const {
  std::lock_guard lock(mu_);
  return refusals_;
}

int64_t WeightNode::reroutes() const {
  std::lock_guard lock(mu_);
  return router_.reroutes();
}

core::StatusOr<std::unique_ptr<DisaggregatedAttention>> WeightNode::OpenRequest(
    uint64_t request_id) {
  {
    std::lock_guard lock(mu_);
    if (Status st = router_.AddRequest(request_id); !st.ok()) return st;
    request_errors_.erase(request_id);
  }
  return std::make_unique<DisaggregatedAttention>(*this, request_id);
}

core::StatusOr<std::shared_ptr<const RoutingTable>> WeightNode::PrepareStep(uint64_t request,
                                                                            int64_t pos0,
                                                                            int64_t num_tokens) {
  std::lock_guard lock(mu_);
  if (auto it = refills_.find(request); it != refills_.end() && !it->second.empty()) {
    return core::Unavailable(fmt::format(
        "request {}: {} of its ranges were lost with attention node {} and await re-prefill",
        request, it->second.size(), fmt::join(refill_lost_[request], ", ")));
  }
  auto snap = router_.PrepareStep(request, pos0, num_tokens);
  if (snap.ok()) {
    auto it = nodes_.find((*snap)->Find(request)->tail().node);
    if (it != nodes_.end() && it->second.times.first_routed_s < 0) {
      it->second.times.first_routed_s = Now();
    }
  }
  return snap;
}

Status WeightNode::SendTo(int32_t node_id, uint16_t am_id, std::span<const std::byte> header,
                          std::span<const std::byte> payload) {
  comm::PeerId peer = 0;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(node_id);
    if (it == nodes_.end()) {
      return core::NotFound(fmt::format("attention node {} is not connected", node_id));
    }
    if (it->second.lost) {
      return core::Unavailable(
          fmt::format("attention node {} failed: {}", node_id, it->second.lost_reason));
    }
    peer = it->second.peer;
  }
  Status st = transport_->Send(peer, am_id, header, payload);
  if (st.ok()) return st;
  if (st.code() == core::StatusCode::kUnavailable) {
    // The transport knows the peer is gone before its failure event arrives: fence it now, so
    // the request's recovery finds its ranges re-homed.
    std::lock_guard lock(mu_);
    FenceLocked(node_id, st.message());
    cv_.notify_all();
  }
  return st.WithPrefix(fmt::format("attention node {}", node_id));
}

Status WeightNode::WaitPartials(uint64_t request, int64_t step, int64_t pos0, int32_t layer,
                                std::span<const int32_t> nodes, std::vector<Partial>& out) {
  out.resize(nodes.size());
  const auto begin = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  const double limit_s = PartialDeadlineLocked();
  const auto deadline = begin + std::chrono::duration<double>(limit_s);
  size_t got = 0;
  std::vector<bool> have(nodes.size(), false);
  while (got < nodes.size()) {
    if (auto e = request_errors_.find(request); e != request_errors_.end() && !e->second.ok()) {
      return e->second;
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (have[i]) continue;
      auto it = mailbox_.find(Key{request, step, layer, nodes[i]});
      if (it != mailbox_.end()) {
        out[i] = std::move(it->second);
        mailbox_.erase(it);
        have[i] = true;
        ++got;
        continue;
      }
      const NodeEntry& n = nodes_.at(nodes[i]);
      if (n.lost) {
        return core::Unavailable(
            fmt::format("attention node {} failed during layer {} of the step at position {}: {}",
                        nodes[i], layer, pos0, n.lost_reason));
      }
    }
    if (got == nodes.size()) break;
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (!have[i]) {
          const std::string why =
              fmt::format("no partial for layer {} of the step at position {} within {:.3f} s",
                          layer, pos0, limit_s);
          FenceLocked(nodes[i], why);
          cv_.notify_all();
          return core::Unavailable(fmt::format("attention node {} fenced: {}", nodes[i], why));
        }
      }
    }
  }
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  if (wait_s_.size() < 1024) {
    wait_s_.push_back(waited);
  } else {
    wait_s_[wait_next_++ % 1024] = waited;
  }
  return Status::Ok();
}

void WeightNode::CloseRequest(uint64_t request_id) {
  std::vector<int32_t> targets;
  {
    std::lock_guard lock(mu_);
    (void)router_.RemoveRequest(request_id);
    for (auto it = mailbox_.begin(); it != mailbox_.end();) {
      it = it->first.request == request_id ? mailbox_.erase(it) : std::next(it);
    }
    request_errors_.erase(request_id);
    refills_.erase(request_id);
    refill_lost_.erase(request_id);
    for (const auto& [id, n] : nodes_) {
      if (!n.lost) targets.push_back(id);
    }
  }
  const std::vector<std::byte> header = Encode(FreeMsg{request_id});
  for (int32_t id : targets) (void)SendTo(id, kFree, header, {});
}

void WeightNode::ShutdownNodes() {
  std::vector<int32_t> targets;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, n] : nodes_) {
      if (!n.lost) targets.push_back(id);
    }
  }
  for (int32_t id : targets) (void)SendTo(id, kShutdown, {}, {});
}

}  // namespace tessera::kernelflume
