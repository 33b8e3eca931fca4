// The two threads of the ucx AmTransport backend: the UCX thread (every UCX call, worker
// progress, UCX callbacks) and the delivery thread (handlers). See ucx_am_internal.h.
#include <fmt/format.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cstring>

#include "comm/ucx_am_internal.h"
#include "core/check.h"
#include "core/log.h"

namespace tessera::comm::ucx_am {

// ---- the UCX thread: loop ----

void UcxAmTransport::UcxLoop() {
  int idle = 0;
  for (;;) {
    const bool had_commands = RunCommands();
    const unsigned progressed = ucp_worker_progress(worker_);
    AfterProgress();
    if (exit_requested_.load() && shutting_down_ &&
        (closing_.empty() || Clock::now() >= shutdown_deadline_)) {
      break;
    }
    if (had_commands || progressed > 0) {
      idle = 0;
      continue;
    }
    if (++idle < kSpinsBeforeSleep) continue;
    idle = 0;
    Sleep();
  }
  FinalCleanup();
}

bool UcxAmTransport::RunCommands() {
  std::deque<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(command_mu_);
    batch.swap(commands_);
  }
  for (auto& command : batch) command();
  return !batch.empty();
}

void UcxAmTransport::Sleep() {
  const ucs_status_t status = ucp_worker_arm(worker_);
  if (status == UCS_ERR_BUSY) return;  // events are pending: progress again
  if (status != UCS_OK) {
    TLOG(kWarn, "am transport 'ucx': ucp_worker_arm: {}", ucs_status_string(status));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return;
  }
  epoll_event events[4];
  epoll_wait(epoll_fd_, events, 4, exit_requested_.load() ? 1 : kSleepMs);
  uint64_t count = 0;
  [[maybe_unused]] ssize_t n = read(wake_fd_, &count, sizeof(count));
}

// Work that must not run inside UCX callbacks: accepting connections, force-closing failed
// endpoints, connect deadlines.
void UcxAmTransport::AfterProgress() {
  if (!conn_requests_.empty()) {
    std::vector<ucp_conn_request_h> requests;
    requests.swap(conn_requests_);
    for (ucp_conn_request_h request : requests) {
      if (shutting_down_ || listener_ == nullptr) {
        if (listener_ != nullptr) ucp_listener_reject(listener_, request);
      } else {
        Accept(request);
      }
    }
  }
  if (!to_force_close_.empty()) {
    std::vector<ucp_ep_h> eps;
    eps.swap(to_force_close_);
    for (ucp_ep_h ep : eps) CloseEp(ep, /*force=*/true);
  }
  if (!connecting_.empty()) {
    const auto now = Clock::now();
    for (PeerId id : std::vector<PeerId>(connecting_)) {
      Peer* peer = FindPeer(id);
      if (peer != nullptr && peer->state == Peer::State::kConnecting &&
          now >= peer->connect_deadline) {
        ConnectDone(id, UCS_ERR_TIMED_OUT,
                    fmt::format("no answer within {} s (is a transport listening there?)",
                                peer->connect_timeout_s));
      }
    }
  }
}

void UcxAmTransport::BeginShutdown() {
  TLOG(kDebug, "am transport 'ucx' {}: shutdown begins", address());
  shutting_down_ = true;
  shutdown_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(kShutdownCloseS));
  if (listener_ != nullptr) {
    for (ucp_conn_request_h request : conn_requests_) ucp_listener_reject(listener_, request);
    conn_requests_.clear();
    ucp_listener_destroy(listener_);
    listener_ = nullptr;
  }
  for (auto& [id, peer] : peers_) {
    if (peer.state == Peer::State::kConnecting) {
      peer.connect_op->Complete(core::Unavailable(
          fmt::format("Connect: {}: this transport is shutting down", peer.name)));
      peer.connect_op.reset();
      to_force_close_.push_back(peer.ep);
    } else if (peer.state == Peer::State::kOpen) {
      CloseEp(peer.ep, /*force=*/false);
    }
    if (peer.state != Peer::State::kFailed) {
      peer.state = Peer::State::kClosed;
      peer.why = "this transport is shutting down";
    }
    peer.ep = nullptr;
  }
  connecting_.clear();
}

void UcxAmTransport::FinalCleanup() {
  {
    std::lock_guard<std::mutex> lock(command_mu_);
    accepting_commands_ = false;
  }
  RunCommands();  // they see shutting_down_ and fail
  for (ucp_ep_h ep : to_force_close_) CloseEp(ep, /*force=*/true);
  to_force_close_.clear();
  if (listener_ != nullptr) ucp_listener_destroy(listener_);
  listener_ = nullptr;
  // Requests still in flight (a close the peer never answered) are released first: UCX must
  // not find unreleased requests when it destroys the endpoints.
  TLOG(kDebug,
       "am transport 'ucx' {}: destroying the worker: {} closes pending, {} ops, {} receives",
       address(), closing_.size(), in_flight_.size(), receiving_.size());
  for (void* request : closing_) ucp_request_free(request);
  closing_.clear();
  for (auto& [ptr, op] : in_flight_) {
    if (op->request != nullptr) ucp_request_free(op->request);
    op->released = true;
  }
  for (auto& [ptr, inbound] : receiving_) {
    ucp_request_free(inbound->request);
    inbound->released = true;
  }
  ucp_worker_destroy(worker_);
  worker_ = nullptr;
  for (auto& [ptr, op] : in_flight_) {
    op->Complete(core::Unavailable("am transport 'ucx': the transport shut down"));
  }
  in_flight_.clear();
  receiving_.clear();
}

// ---- the UCX thread: peers ----

Peer* UcxAmTransport::FindPeer(PeerId id) {
  auto it = peers_.find(id);
  return it == peers_.end() ? nullptr : &it->second;
}

core::Status UcxAmTransport::CheckUsable(const char* what, PeerId id, Peer** peer) {
  if (shutting_down_) {
    return core::Unavailable(fmt::format("{}: this transport is shutting down", what));
  }
  *peer = FindPeer(id);
  if (*peer == nullptr || (*peer)->state == Peer::State::kConnecting) {
    return core::InvalidArgument(fmt::format("{}: peer: got {}, no such peer", what, id));
  }
  if ((*peer)->state != Peer::State::kOpen) {
    return core::Unavailable(
        fmt::format("{}: peer {} ({}): {}", what, id, (*peer)->name, (*peer)->why));
  }
  return core::Status::Ok();
}

core::Status UcxAmTransport::OpStatus(const char* what, PeerId id, ucs_status_t status) {
  if (status == UCS_OK) return core::Status::Ok();
  Peer* peer = FindPeer(id);
  const std::string name = peer != nullptr ? peer->name : "?";
  if (peer != nullptr && peer->state != Peer::State::kOpen && !peer->why.empty()) {
    return core::Unavailable(fmt::format("{}: peer {} ({}): {}", what, id, name, peer->why));
  }
  if (IsPeerLoss(status) || shutting_down_) {
    return core::Unavailable(
        fmt::format("{}: peer {} ({}): {}", what, id, name, DescribePeerLoss(status)));
  }
  return UcxError(fmt::format("{}: peer {} ({})", what, id, name), status);
}

std::shared_ptr<Op> UcxAmTransport::Untrack(Op* op) {
  auto it = in_flight_.find(op);
  if (it == in_flight_.end()) return nullptr;
  std::shared_ptr<Op> owned = std::move(it->second);
  in_flight_.erase(it);
  return owned;
}

void UcxAmTransport::CloseEp(ucp_ep_h ep, bool force) {
  if (ep == nullptr) return;
  eps_.erase(ep);
  ucp_request_param_t params{};
  params.op_attr_mask =
      UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  params.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  params.cb.send = &UcxAmTransport::OnCloseDone;
  params.user_data = this;
  void* request = ucp_ep_close_nbx(ep, &params);
  if (UCS_PTR_IS_PTR(request)) {
    closing_.insert(request);
  } else if (UCS_PTR_IS_ERR(request)) {
    TLOG(kDebug, "am transport 'ucx': closing an endpoint: {}",
         ucs_status_string(UCS_PTR_STATUS(request)));
  }
}

void UcxAmTransport::FailPeer(Peer& peer, ucs_status_t status) {
  peer.state = Peer::State::kFailed;
  peer.why = DescribePeerLoss(status);
  eps_.erase(peer.ep);
  to_force_close_.push_back(peer.ep);
  peer.ep = nullptr;
  auto inbound = std::make_shared<Inbound>();
  inbound->event = AmEvent::Failure(
      peer.id, core::Unavailable(fmt::format("peer {} ({}): {}", peer.id, peer.name, peer.why)));
  inbound->ready = true;
  Push(std::move(inbound));
}

void UcxAmTransport::ConnectDone(PeerId id, ucs_status_t status, const std::string& timeout_why) {
  Peer* peer = FindPeer(id);
  if (peer == nullptr || peer->state != Peer::State::kConnecting) return;
  std::erase(connecting_, id);
  std::shared_ptr<Op> op = std::move(peer->connect_op);
  if (status == UCS_OK) {
    peer->state = Peer::State::kOpen;
    op->Complete(core::Status::Ok(), id);
    return;
  }
  const std::string why = timeout_why.empty() ? DescribePeerLoss(status) : timeout_why;
  op->Complete(core::Unavailable(fmt::format("Connect: {}: {}", peer->name, why)));
  eps_.erase(peer->ep);
  to_force_close_.push_back(peer->ep);
  peers_.erase(id);
}

void UcxAmTransport::Accept(ucp_conn_request_h request) {
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  std::string name = "?";
  if (ucp_conn_request_query(request, &attr) == UCS_OK) name = FormatSockAddr(attr.client_address);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.conn_request = request;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxAmTransport::OnEpError;
  params.err_handler.arg = this;
  ucp_ep_h ep = nullptr;
  const ucs_status_t status = ucp_ep_create(worker_, &params, &ep);
  if (status != UCS_OK) {
    TLOG(kWarn, "am transport 'ucx': accepting a connection from {}: {}", name,
         ucs_status_string(status));
    return;
  }
  const PeerId id = next_peer_++;
  Peer& peer = peers_[id];
  peer.id = id;
  peer.name = name;
  peer.ep = ep;
  peer.state = Peer::State::kOpen;
  eps_[ep] = id;
  auto inbound = std::make_shared<Inbound>();
  inbound->event = AmEvent::Accept(id);
  inbound->ready = true;
  Push(std::move(inbound));
}

// ---- the UCX thread: commands ----

void UcxAmTransport::StartListen(const std::shared_ptr<Op>& op, const SockAddr& addr) {
  if (shutting_down_) return op->Complete(core::Unavailable("Listen: shutting down"));
  if (listener_ != nullptr) {
    return op->Complete(
        core::FailedPrecondition(fmt::format("Listen: already listening on {}", address())));
  }
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = addr.get();
  params.sockaddr.addrlen = addr.size();
  params.conn_handler.cb = &UcxAmTransport::OnConnRequest;
  params.conn_handler.arg = this;
  sockaddr_storage wanted{};
  std::memcpy(&wanted, &addr.addr, sizeof(addr.addr));
  ucs_status_t status = ucp_listener_create(worker_, &params, &listener_);
  if (status == UCS_ERR_BUSY) {
    listener_ = nullptr;
    return op->Complete(core::Unavailable(fmt::format(
        "Listen: {} is already in use (pick another port, or 0 for any)", FormatSockAddr(wanted))));
  }
  if (status != UCS_OK) {
    listener_ = nullptr;
    return op->Complete(UcxError(fmt::format("Listen on {}", FormatSockAddr(wanted)), status));
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  status = ucp_listener_query(listener_, &attr);
  if (status != UCS_OK) return op->Complete(UcxError("Listen: ucp_listener_query", status));
  {
    std::lock_guard<std::mutex> lock(address_mu_);
    address_ = FormatSockAddr(attr.sockaddr);
  }
  op->Complete(core::Status::Ok());
}

void UcxAmTransport::StartConnect(const std::shared_ptr<Op>& op, const SockAddr& addr,
                                  const std::string& name, double timeout_s) {
  if (shutting_down_) return op->Complete(core::Unavailable("Connect: shutting down"));
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = addr.get();
  params.sockaddr.addrlen = addr.size();
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxAmTransport::OnEpError;
  params.err_handler.arg = this;
  ucp_ep_h ep = nullptr;
  const ucs_status_t status = ucp_ep_create(worker_, &params, &ep);
  if (status != UCS_OK) {
    return op->Complete(
        core::Unavailable(fmt::format("Connect: {}: {}", name, DescribePeerLoss(status))));
  }
  const PeerId id = next_peer_++;
  Peer& peer = peers_[id];
  peer.id = id;
  peer.name = name;
  peer.ep = ep;
  peer.state = Peer::State::kConnecting;
  peer.connect_op = op;
  peer.connect_timeout_s = timeout_s;
  peer.connect_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s));
  eps_[ep] = id;
  connecting_.push_back(id);
  // The flush completes once the connection is established (the listener accepted it).
  op->target = id;
  ucp_request_param_t flush{};
  flush.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  flush.cb.send = &UcxAmTransport::OnFlushDone;
  flush.user_data = op.get();
  void* request = ucp_ep_flush_nbx(ep, &flush);
  if (request == nullptr) {
    ConnectDone(id, UCS_OK);
  } else if (UCS_PTR_IS_ERR(request)) {
    ConnectDone(id, UCS_PTR_STATUS(request));
  } else {
    Track(op, request);
  }
}

void UcxAmTransport::StartSend(const std::shared_ptr<Op>& op, std::span<const std::byte> header,
                               std::span<const std::byte> payload) {
  Peer* peer = nullptr;
  core::Status usable = CheckUsable("Send", op->target, &peer);
  if (!usable.ok()) return op->Complete(std::move(usable));
  size_t parts = 0;
  for (std::span<const std::byte> part : {header, payload}) {
    if (part.empty()) continue;
    op->iov[parts].buffer = const_cast<std::byte*>(part.data());
    op->iov[parts].length = part.size();
    ++parts;
  }
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_DATATYPE;
  params.flags = UCP_AM_SEND_FLAG_REPLY;  // the receiver learns which endpoint sent it
  params.cb.send = &UcxAmTransport::OnSendDone;
  params.user_data = op.get();
  const void* buffer = nullptr;
  size_t count = 0;
  if (parts == 2) {
    params.datatype = ucp_dt_make_iov();
    buffer = op->iov;
    count = 2;
  } else {
    params.datatype = ucp_dt_make_contig(1);
    if (parts == 1) {
      buffer = op->iov[0].buffer;
      count = op->iov[0].length;
    }
  }
  void* request =
      ucp_am_send_nbx(peer->ep, kUcxAmId, &op->wire, sizeof(op->wire), buffer, count, &params);
  if (request == nullptr) {
    op->Complete(core::Status::Ok());
  } else if (UCS_PTR_IS_ERR(request)) {
    op->Complete(OpStatus("Send", op->target, UCS_PTR_STATUS(request)));
  } else {
    Track(op, request);
  }
}

void UcxAmTransport::StartGet(const std::shared_ptr<Op>& op, std::span<const std::byte> packed_rkey,
                              uint64_t remote_address, void* local, size_t bytes) {
  Peer* peer = nullptr;
  core::Status usable = CheckUsable("Get", op->target, &peer);
  if (!usable.ok()) return op->Complete(std::move(usable));
  if (bytes == 0) return op->Complete(core::Status::Ok());
  ucs_status_t status = ucp_ep_rkey_unpack(peer->ep, packed_rkey.data(), &op->rkey);
  if (status != UCS_OK) {
    op->rkey = nullptr;
    return op->Complete(
        UcxError(fmt::format("Get: remote_key of peer {} ({}) could not be unpacked", op->target,
                             peer->name),
                 status));
  }
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  params.cb.send = &UcxAmTransport::OnGetDone;
  params.user_data = op.get();
  void* request = ucp_get_nbx(peer->ep, local, bytes, remote_address, op->rkey, &params);
  if (UCS_PTR_IS_PTR(request)) return Track(op, request);
  ucp_rkey_destroy(op->rkey);
  op->rkey = nullptr;
  op->Complete(OpStatus("Get", op->target, UCS_PTR_STATUS(request)));
}

void UcxAmTransport::StartClose(const std::shared_ptr<Op>& op) {
  Peer* peer = FindPeer(op->target);
  if (peer == nullptr || peer->state == Peer::State::kConnecting) {
    return op->Complete(
        core::InvalidArgument(fmt::format("Close: peer: got {}, no such peer", op->target)));
  }
  if (peer->state == Peer::State::kOpen) {
    peer->state = Peer::State::kClosed;
    peer->why = "closed by this side";
    CloseEp(peer->ep, /*force=*/false);
    peer->ep = nullptr;
  }
  op->Complete(core::Status::Ok());
}

// ---- the UCX thread: callbacks ----

void UcxAmTransport::OnEpError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* self = static_cast<UcxAmTransport*>(arg);
  TLOG(kDebug, "am transport 'ucx' {}: endpoint error {}", self->address(),
       ucs_status_string(status));
  auto it = self->eps_.find(ep);
  if (it == self->eps_.end()) return;  // closing or closed by this side
  Peer* peer = self->FindPeer(it->second);
  if (peer == nullptr) return;
  if (peer->state == Peer::State::kConnecting) return self->ConnectDone(peer->id, status);
  if (peer->state == Peer::State::kOpen) self->FailPeer(*peer, status);
}

void UcxAmTransport::OnConnRequest(ucp_conn_request_h request, void* arg) {
  static_cast<UcxAmTransport*>(arg)->conn_requests_.push_back(request);
}

ucs_status_t UcxAmTransport::OnAm(void* arg, const void* header, size_t header_length, void* data,
                                  size_t length, const ucp_am_recv_param_t* param) {
  return static_cast<UcxAmTransport*>(arg)->OnMessage(header, header_length, data, length, param);
}

ucs_status_t UcxAmTransport::OnMessage(const void* header, size_t header_length, void* data,
                                       size_t length, const ucp_am_recv_param_t* param) {
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  const ucp_ep_h ep =
      (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0 ? param->reply_ep : nullptr;
  auto it = eps_.find(ep);
  WireHeader wire;
  if (header_length == sizeof(wire)) std::memcpy(&wire, header, sizeof(wire));
  if (shutting_down_ || it == eps_.end() || header_length != sizeof(wire) ||
      wire.header_bytes > length) {
    if (!shutting_down_ && it != eps_.end()) {
      TLOG(kWarn, "am transport 'ucx': dropped a malformed message ({} header bytes)",
           header_length);
    }
    return rndv ? UCS_ERR_CANCELED : UCS_OK;
  }
  auto inbound = std::make_shared<Inbound>();
  inbound->owner = this;
  AmEvent& event = inbound->event;
  event.kind = AmEvent::Kind::kMessage;
  event.peer = it->second;
  event.am_id = wire.am_id;
  event.header_bytes = wire.header_bytes;
  event.bytes.resize(length);
  if (!rndv) {
    if (length > 0) std::memcpy(event.bytes.data(), data, length);
    inbound->ready = true;
    Push(std::move(inbound));
    return UCS_OK;
  }
  Inbound* raw = inbound.get();
  Push(inbound);  // holds the place in the order; delivered once the bytes arrived
  ucp_request_param_t params{};
  params.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
  params.datatype = ucp_dt_make_contig(1);
  params.cb.recv_am = &UcxAmTransport::OnRecvDone;
  params.user_data = raw;
  void* request = ucp_am_recv_data_nbx(worker_, data, event.bytes.data(), length, &params);
  if (request == nullptr) {
    MarkReady(raw, /*drop=*/false);
  } else if (UCS_PTR_IS_ERR(request)) {
    TLOG(kWarn, "am transport 'ucx': receiving a {}-byte message: {}", length,
         ucs_status_string(UCS_PTR_STATUS(request)));
    MarkReady(raw, /*drop=*/true);
  } else {
    raw->request = request;
    receiving_[raw] = std::move(inbound);
  }
  return UCS_OK;
}

void UcxAmTransport::OnRecvDone(void* request, ucs_status_t status, size_t length,
                                void* user_data) {
  (void)length;
  auto* inbound = static_cast<Inbound*>(user_data);
  UcxAmTransport* self = inbound->owner;
  self->MarkReady(inbound, status != UCS_OK);
  self->FreeRequest(request, inbound->released);
  self->receiving_.erase(inbound);  // the queue still holds it
}

void UcxAmTransport::OnSendDone(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<Op*>(user_data);
  UcxAmTransport* self = op->owner;
  std::shared_ptr<Op> owned = self->Untrack(op);
  op->Complete(self->OpStatus("Send", op->target, status));
  self->FreeRequest(request, op->released);
}

void UcxAmTransport::OnGetDone(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<Op*>(user_data);
  UcxAmTransport* self = op->owner;
  std::shared_ptr<Op> owned = self->Untrack(op);
  if (op->rkey != nullptr && !op->released) ucp_rkey_destroy(op->rkey);
  op->rkey = nullptr;
  op->Complete(self->OpStatus("Get", op->target, status));
  self->FreeRequest(request, op->released);
}

void UcxAmTransport::OnFlushDone(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<Op*>(user_data);
  UcxAmTransport* self = op->owner;
  std::shared_ptr<Op> owned = self->Untrack(op);
  self->ConnectDone(op->target, status);
  self->FreeRequest(request, op->released);
}

void UcxAmTransport::OnCloseDone(void* request, ucs_status_t status, void* user_data) {
  (void)status;
  // Not found: released at shutdown already.
  if (static_cast<UcxAmTransport*>(user_data)->closing_.erase(request) > 0) {
    ucp_request_free(request);
  }
}

// ---- the delivery thread ----

void UcxAmTransport::Push(std::shared_ptr<Inbound> inbound) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  queue_.push_back(std::move(inbound));
  queue_cv_.notify_one();
}

void UcxAmTransport::MarkReady(Inbound* inbound, bool drop) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  inbound->ready = true;
  inbound->drop = drop;
  queue_cv_.notify_one();
}

void UcxAmTransport::DeliveryLoop() {
  for (;;) {
    std::shared_ptr<Inbound> next;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait(lock,
                     [&] { return delivery_stop_ || (!queue_.empty() && queue_.front()->ready); });
      if (delivery_stop_) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    if (!next->drop) dispatcher_.Deliver(next->event);
  }
}

}  // namespace tessera::comm::ucx_am
