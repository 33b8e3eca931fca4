// AmDispatcher: the handler table of an AmTransport backend and the inbound events it delivers
// (accept, message, failure). A backend queues AmEvents as they arrive and calls Deliver on its
// progress thread, one event at a time. Shared by the fake and the ucx backends.
//
// An AmEvent owns its bytes: `bytes` holds the header followed by the payload
// (header_bytes of it belong to the header). A message for an am_id without a handler is
// dropped with a warning.
// Thread-safety: Set* and Deliver may be called from any threads; a handler runs on the thread
// that calls Deliver, without any lock of the dispatcher held (a handler may set handlers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "comm/am_transport.h"

namespace tessera::comm {

struct AmEvent {
  enum class Kind { kAccept, kMessage, kFailure };
  Kind kind = Kind::kMessage;
  PeerId peer = 0;
  uint16_t am_id = 0;
  std::vector<std::byte> bytes;  // header then payload
  size_t header_bytes = 0;
  core::Status why;  // kFailure: Unavailable naming the peer and the cause

  static AmEvent Accept(PeerId peer);
  static AmEvent Failure(PeerId peer, core::Status why);
  // Copies header and payload into one buffer.
  static AmEvent Message(PeerId from, uint16_t am_id, std::span<const std::byte> header,
                         std::span<const std::byte> payload);
};

class AmDispatcher {
 public:
  void SetHandler(uint16_t am_id, AmHandler handler);
  void SetAcceptHandler(PeerEventHandler on_accept);
  void SetFailureHandler(PeerEventHandler on_failure);

  // Runs the handler the event asks for (if one is set).
  void Deliver(const AmEvent& event) const;
  // Runs the handler of am_id on (header, payload); false (and a warning) when none is set.
  bool DeliverMessage(PeerId from, uint16_t am_id, std::span<const std::byte> header,
                      std::span<const std::byte> payload) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint16_t, std::shared_ptr<const AmHandler>> handlers_;
  std::shared_ptr<const PeerEventHandler> on_accept_;
  std::shared_ptr<const PeerEventHandler> on_failure_;
};

}  // namespace tessera::comm
