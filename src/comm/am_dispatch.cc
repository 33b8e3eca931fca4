#include "comm/am_dispatch.h"

#include <cstring>

#include "core/log.h"

namespace tessera::comm {

AmEvent AmEvent::Accept(PeerId peer) {
  AmEvent e;
  e.kind = Kind::kAccept;
  e.peer = peer;
  return e;
}

AmEvent AmEvent::Failure(PeerId peer, core::Status why) {
  AmEvent e;
  e.kind = Kind::kFailure;
  e.peer = peer;
  e.why = std::move(why);
  return e;
}

AmEvent AmEvent::Message(PeerId from, uint16_t am_id, std::span<const std::byte> header,
                         std::span<const std::byte> payload) {
  AmEvent e;
  e.kind = Kind::kMessage;
  e.peer = from;
  e.am_id = am_id;
  e.header_bytes = header.size();
  e.bytes.resize(header.size() + payload.size());
  if (!header.empty()) std::memcpy(e.bytes.data(), header.data(), header.size());
  if (!payload.empty()) {
    std::memcpy(e.bytes.data() + header.size(), payload.data(), payload.size());
  }
  return e;
}

void AmDispatcher::SetHandler(uint16_t am_id, AmHandler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  handlers_[am_id] = std::make_shared<const AmHandler>(std::move(handler));
}

void AmDispatcher::SetAcceptHandler(PeerEventHandler on_accept) {
  std::lock_guard<std::mutex> lock(mu_);
  on_accept_ = std::make_shared<const PeerEventHandler>(std::move(on_accept));
}

void AmDispatcher::SetFailureHandler(PeerEventHandler on_failure) {
  std::lock_guard<std::mutex> lock(mu_);
  on_failure_ = std::make_shared<const PeerEventHandler>(std::move(on_failure));
}

bool AmDispatcher::DeliverMessage(PeerId from, uint16_t am_id, std::span<const std::byte> header,
                                  std::span<const std::byte> payload) const {
  std::shared_ptr<const AmHandler> handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handlers_.find(am_id);
    if (it != handlers_.end()) handler = it->second;
  }
  if (handler == nullptr || !*handler) {
    TLOG(kWarn, "am transport: dropped a message for am_id {} from peer {}: no handler", am_id,
         from);
    return false;
  }
  (*handler)(from, header, payload);
  return true;
}

void AmDispatcher::Deliver(const AmEvent& event) const {
  if (event.kind == AmEvent::Kind::kMessage) {
    const std::span<const std::byte> all(event.bytes);
    DeliverMessage(event.peer, event.am_id, all.first(event.header_bytes),
                   all.subspan(event.header_bytes));
    return;
  }
  std::shared_ptr<const PeerEventHandler> handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    handler = event.kind == AmEvent::Kind::kAccept ? on_accept_ : on_failure_;
  }
  if (handler != nullptr && *handler) (*handler)(event.peer, event.why);
}

}  // namespace tessera::comm
