#include "kernelflume/attention_node.h"

#include <fmt/format.h>
#include <time.h>

#include <chrono>
#include <cstring>

namespace tessera::kernelflume {

using core::Status;

AttentionNode::AttentionNode(const AttentionNodeOptions& options) : options_(options) {}

AttentionNode::~AttentionNode() { comm::DestroyTransport(transport_); }

core::StatusOr<std::unique_ptr<AttentionNode>> AttentionNode::Join(
    std::unique_ptr<comm::AmTransport> transport, const std::string& address,
    const AttentionNodeOptions& options) {
  if (options.capacity_tokens < 1) {
    return core::InvalidArgument(
        fmt::format("capacity_tokens: got {}, must be >= 1", options.capacity_tokens));
  }
  if (options.page_tokens < 1) {
    return core::InvalidArgument(
        fmt::format("page_tokens: got {}, must be >= 1", options.page_tokens));
  }
  std::unique_ptr<AttentionNode> node(new AttentionNode(options));
  AttentionNode* self = node.get();
  comm::AmTransport& t = *transport;
  node->transport_ = std::move(transport);
  t.SetHandler(kJoinReply, [self](comm::PeerId, auto header, auto) { self->OnJoinReply(header); });
  t.SetHandler(kQuery,
               [self](comm::PeerId, auto header, auto payload) { self->OnQuery(header, payload); });
  t.SetHandler(kAppend, [self](comm::PeerId, auto header, auto payload) {
    self->OnAppend(header, payload);
  });
  t.SetHandler(kFree, [self](comm::PeerId, auto header, auto) {
    auto m = DecodeFree(header);
    if (m.ok() && self->store_) self->store_->Free(m->request_id);
    self->NoteRanges();
  });
  t.SetHandler(kFreeRange, [self](comm::PeerId, auto header, auto) {
    auto m = DecodeFreeRange(header);
    if (m.ok() && self->store_) self->store_->FreeRange(m->request_id, m->range_id);
    self->NoteRanges();
  });
  t.SetHandler(kExport, [self](comm::PeerId, auto header, auto) { self->OnExport(header); });
  t.SetHandler(kRangeExport, [self](comm::PeerId, auto header, auto) { self->OnImport(header); });
  t.SetHandler(kBatch,
               [self](comm::PeerId, auto header, auto payload) { self->OnBatch(header, payload); });
  t.SetHandler(kShutdown, [self](comm::PeerId, auto, auto) { self->Finish(Status::Ok()); });
  t.SetFailureHandler([self](comm::PeerId peer, const Status& why) {
    if (peer == self->weight_) {
      self->Finish(core::Unavailable("the weight node was lost: " + why.message()));
    }
  });
  RETURN_IF_ERROR(CheckKvCapacity(options.capacity_tokens, options.page_tokens));
  if (Status st = t.Listen(options.listen_host, 0); !st.ok()) {
    return st.WithPrefix("attention node: listening for peer nodes");
  }
  auto peer = t.Connect(address, options.join_timeout_s);
  if (!peer.ok()) return peer.status().WithPrefix("attention node: joining the weight node");
  node->weight_ = *peer;
  JoinMsg join{options.node_id, options.capacity_tokens, options.page_tokens, options.fingerprint};
  const std::vector<std::byte> header = Encode(join);
  if (Status st = t.Send(*peer, kJoin, header, {}); !st.ok()) return st;
  std::unique_lock lock(node->mu_);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options.join_timeout_s);
  if (!node->cv_.wait_until(lock, deadline,
                            [&] { return node->join_answered_ || node->finished_; })) {
    return core::Unavailable(fmt::format("attention node {}: no join reply from {} within {} s",
                                         options.node_id, address, options.join_timeout_s));
  }
  if (node->finished_ && !node->join_answered_) return node->finish_status_;
  if (!node->store_error_.empty()) {
    return core::FailedPrecondition(fmt::format(
        "attention node {}: cannot hold this model's KV: {}", options.node_id, node->store_error_));
  }
  if (!node->join_reply_.accepted) {
    return core::FailedPrecondition(
        fmt::format("attention node {}: the weight node refused the "
                    "join: {}",
                    options.node_id, node->join_reply_.reason));
  }
  return node;
}

void AttentionNode::OnJoinReply(std::span<const std::byte> header) {
  auto reply = DecodeJoinReply(header);
  std::lock_guard lock(mu_);
  if (!reply.ok()) {
    join_reply_.accepted = false;
    join_reply_.reason = reply.status().message();
  } else {
    join_reply_ = *reply;
    if (join_reply_.accepted) {
      shape_ = join_reply_.shape;
      auto store = RangeKvStore::Create(shape_, options_.capacity_tokens, options_.page_tokens);
      if (store.ok()) {
        store_ = std::move(*store);
      } else {
        store_error_ = store.status().message();
      }
    }
  }
  join_answered_ = true;
  cv_.notify_all();
}

void AttentionNode::SendFailure(const QueryMsg& m, const Status& st) {
  PartialMsg reply{m.request_id,
                   m.step,
                   m.layer,
                   options_.node_id,
                   static_cast<int32_t>(st.code()),
                   fmt::format("attention node {}: {}", options_.node_id, st.message())};
  const std::vector<std::byte> header = Encode(reply);
  Reply(header, {});
  std::lock_guard lock(mu_);
  ++stats_.failed_queries;
}

namespace {
// CPU time of the calling thread (ns): a node's "compute" for its load report, so time spent
// waiting for a core on a crowded machine does not count as busy.
int64_t ThreadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}
}  // namespace

bool AttentionNode::TryAnswer(const PendingQuery& p) {
  const QueryMsg& m = p.msg;
  segments_.clear();
  for (const RangeNeed& g : m.ranges) {
    Status st = store_->AddSegments(m.request_id, g.range_id, m.layer, g.tokens, segments_);
    if (st.code() == core::StatusCode::kFailedPrecondition) return false;  // append in flight
    if (!st.ok()) {
      SendFailure(m, st);
      return true;
    }
  }
  const int64_t cpu0_ns = ThreadCpuNs();
  const int64_t tq = m.num_q_tokens, h = shape_.num_heads, d = shape_.head_dim;
  o_.resize(tq * h * d + tq * h);
  kernels::DecodeAttentionShape shape;
  shape.num_q_tokens = tq;
  shape.num_heads = h;
  shape.num_kv_heads = shape_.num_kv_heads;
  shape.head_dim = d;
  shape.scale = shape_.scale;
  Status st =
      kernels::PartialAttention(shape, p.q.data(), segments_, o_.data(), o_.data() + tq * h * d);
  if (!st.ok()) {
    SendFailure(m, st);
    return true;
  }
  PartialMsg reply{m.request_id, m.step, m.layer, options_.node_id, 0, ""};
  reply.compute_us = (ThreadCpuNs() - cpu0_ns) / 1000;
  const std::vector<std::byte> header = Encode(reply);
  Reply(header, std::as_bytes(std::span<const float>(o_)));
  std::lock_guard lock(mu_);
  ++stats_.queries;
  return true;
}

void AttentionNode::OnQuery(std::span<const std::byte> header, std::span<const std::byte> payload) {
  auto m = DecodeQuery(header);
  if (!m.ok()) {
    SendFailure(QueryMsg{}, m.status());
    return;
  }
  PendingQuery p{std::move(*m), {}};
  if (store_ == nullptr) {
    SendFailure(p.msg, core::FailedPrecondition("query before the join was accepted"));
    return;
  }
  const size_t count = static_cast<size_t>(p.msg.num_q_tokens) * shape_.num_heads * shape_.head_dim;
  if (p.msg.num_q_tokens < 1) {
    SendFailure(p.msg, core::InvalidArgument(
                           fmt::format("query: num_q_tokens {} must be >= 1", p.msg.num_q_tokens)));
    return;
  }
  if (Status st = CopyFloats(payload, count, "query", p.q); !st.ok()) {
    SendFailure(p.msg, st);
    return;
  }
  if (!TryAnswer(p)) {
    pending_.push_back(std::move(p));
    std::lock_guard lock(mu_);
    ++stats_.deferred_queries;
  }
}

void AttentionNode::OnAppend(std::span<const std::byte> header,
                             std::span<const std::byte> payload) {
  auto m = DecodeAppend(header);
  Status st = m.status();
  std::vector<float> kv;
  if (st.ok() && store_ == nullptr) st = core::FailedPrecondition("append before the join");
  if (st.ok()) {
    const size_t per = static_cast<size_t>(m->num_tokens) * shape_.num_kv_heads * shape_.head_dim;
    st = m->num_tokens < 1 ? core::InvalidArgument("append: num_tokens must be >= 1")
                           : CopyFloats(payload, 2 * per, "append", kv);
    if (st.ok()) {
      st = store_->Append(m->request_id, m->range_id, m->layer, m->offset, m->num_tokens, kv.data(),
                          kv.data() + per);
    }
  }
  if (!st.ok()) {
    // Nobody waits on an append; the next query of this range reports the failure.
    QueryMsg q;
    if (m.ok()) {
      q.request_id = m->request_id;
      q.layer = m->layer;
      q.step = -1;
    }
    SendFailure(q, st);
    return;
  }
  {
    std::lock_guard lock(mu_);
    ++stats_.appends;
    stats_.ranges = store_->num_ranges();
  }
  AnswerPending();
}

void AttentionNode::AnswerPending() {
  while (!pending_.empty()) {
    size_t before = pending_.size();
    for (auto it = pending_.begin(); it != pending_.end();) {
      it = TryAnswer(*it) ? pending_.erase(it) : std::next(it);
    }
    if (pending_.size() == before) break;
  }
}

void AttentionNode::OnExport(std::span<const std::byte> header) {
  auto m = DecodeExport(header);
  if (!m.ok()) return;  // the weight node's migration times out naming this node
  RangeExportMsg reply;
  reply.migration_id = m->migration_id;
  reply.request_id = m->request_id;
  reply.range_id = m->range_id;
  Status st = store_ ? Status::Ok() : core::FailedPrecondition("export before the join");
  if (st.ok() && pool_key_ == nullptr) {
    const std::span<std::byte> pool = store_->PoolBytes();
    auto key = transport_->RegisterMemory(pool.data(), pool.size());
    if (key.ok()) {
      pool_key_ = std::move(*key);
    } else {
      st = key.status();
    }
  }
  if (st.ok()) {
    auto pages = store_->Export(m->request_id, m->range_id);
    if (pages.ok()) {
      reply.address = transport_->address();
      reply.base_address = pool_key_->address();
      reply.page_bytes = store_->page_bytes();
      reply.tokens = pages->tokens;
      const std::span<const std::byte> key = pool_key_->remote_key();
      reply.remote_key.assign(key.begin(), key.end());
      reply.pages = std::move(pages->pages);
    } else {
      st = pages.status();
    }
  }
  if (!st.ok()) {
    reply.code = static_cast<int32_t>(st.code());
    reply.message = fmt::format("attention node {}: {}", options_.node_id, st.message());
  } else {
    std::lock_guard lock(mu_);
    ++stats_.ranges_exported;
  }
  const std::vector<std::byte> bytes = Encode(reply);
  (void)transport_->Send(weight_, kRangeExport, bytes, {});
}

core::StatusOr<comm::PeerId> AttentionNode::PeerNode(const std::string& address) {
  auto it = peer_nodes_.find(address);
  if (it != peer_nodes_.end()) return it->second;
  auto peer = transport_->Connect(address, options_.join_timeout_s);
  if (!peer.ok()) return peer.status();
  peer_nodes_[address] = *peer;
  return *peer;
}

void AttentionNode::OnImport(std::span<const std::byte> header) {
  auto m = DecodeRangeExport(header);
  if (!m.ok()) return;
  Status st = store_ ? Status::Ok() : core::FailedPrecondition("import before the join");
  if (st.ok() && m->page_bytes != store_->page_bytes()) {
    st = core::InvalidArgument(fmt::format("import: source pages of {} bytes, this node's {}",
                                           m->page_bytes, store_->page_bytes()));
  }
  if (st.ok()) {
    auto source = PeerNode(m->address);
    if (!source.ok()) {
      st = source.status();
    } else {
      st = store_->ImportRange(
          m->request_id, m->range_id, m->tokens, [&](size_t i, std::span<std::byte> page) {
            if (i >= m->pages.size()) return core::InvalidArgument("import: too few pages");
            const uint64_t at =
                m->base_address + static_cast<uint64_t>(m->pages[i]) * m->page_bytes;
            return transport_->Get(*source, m->remote_key, at, page.data(), page.size());
          });
    }
  }
  MigratedMsg done{
      m->migration_id, options_.node_id, static_cast<int32_t>(st.code()),
      st.ok() ? "" : fmt::format("attention node {}: {}", options_.node_id, st.message())};
  if (st.ok()) {
    std::lock_guard lock(mu_);
    ++stats_.ranges_imported;
    stats_.ranges = store_->num_ranges();
  }
  const std::vector<std::byte> bytes = Encode(done);
  (void)transport_->Send(weight_, kMigrated, bytes, {});
}

void AttentionNode::NoteRanges() {
  std::lock_guard lock(mu_);
  stats_.ranges = store_ ? store_->num_ranges() : 0;
}

void AttentionNode::Reply(std::span<const std::byte> header, std::span<const std::byte> payload) {
  if (!gathering_) {
    (void)transport_->Send(weight_, kPartial, header, payload);
    return;
  }
  reply_headers_.emplace_back(header.begin(), header.end());
  reply_payloads_.emplace_back(payload.begin(), payload.end());
}

void AttentionNode::OnBatch(std::span<const std::byte> header, std::span<const std::byte> payload) {
  auto entries = DecodeBatch(header, payload);
  if (!entries.ok()) {
    SendFailure(QueryMsg{}, entries.status());
    return;
  }
  gathering_ = true;
  for (const BatchEntry& e : *entries) {
    if (e.am_id == kQuery) {
      OnQuery(e.header, e.payload);
    } else if (e.am_id == kAppend) {
      OnAppend(e.header, e.payload);
    }
  }
  gathering_ = false;
  std::vector<BatchEntry> replies(reply_headers_.size());
  for (size_t i = 0; i < replies.size(); ++i) {
    replies[i] = BatchEntry{kPartial, reply_headers_[i], reply_payloads_[i]};
  }
  if (replies.size() == 1) {
    (void)transport_->Send(weight_, kPartial, replies[0].header, replies[0].payload);
  } else if (!replies.empty()) {
    (void)transport_->Send(weight_, kBatch, EncodeBatchHeader(replies),
                           EncodeBatchPayload(replies));
  }
  reply_headers_.clear();
  reply_payloads_.clear();
}

void AttentionNode::Finish(Status st) {
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  finish_status_ = std::move(st);
  cv_.notify_all();
}

Status AttentionNode::Wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return finished_; });
  return finish_status_;
}

AttentionNodeStats AttentionNode::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Status ServeAttentionNode(const std::string& address, const std::string& transport,
                          const AttentionNodeOptions& options) {
  auto t = comm::MakeAmTransport(transport);
  if (!t.ok()) return t.status();
  auto node = AttentionNode::Join(std::move(*t), address, options);
  if (!node.ok()) return node.status();
  return (*node)->Wait();
}

}  // namespace tessera::kernelflume
