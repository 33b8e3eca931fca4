// AmTransport: a point-to-point transport with active messages (AM), one-sided reads of
// registered memory (RMA get) and peer-failure detection. KernelFlume's weight and attention
// nodes and ElasWave's elastic workers talk through it. Backends (MakeAmTransport):
//   "fake"  in-process: every fake transport of one process finds the others through a
//           process-wide registry by address "fake:N"; destroying one is how a test kills a
//           peer (its peers then see a failure). fake_am_transport.h.
//   "ucx"   a UCX worker and a listener over sockaddr (TCP on this machine); a peer whose
//           process dies is detected by the endpoint error callback. ucx_am_transport.h.
// am_conformance.h holds the contract both backends are tested against.
//
// Peers: Listen() on one side, Connect() on the other; each side names the connection by a
// PeerId local to its transport (the ids of the two sides are unrelated). Connect returns
// once the listener has accepted: its accept handler runs before any message from that peer.
//
// Messages: Send(peer, am_id, header, payload) runs the receiver's handler for am_id with the
// same bytes. header and payload are independent byte strings of any size (empty allowed,
// payloads of many MiB work); the split only spares the caller a copy. Messages from one
// sender to one peer arrive in send order; a message for an am_id with no handler is dropped
// (logged at warn level).
//
// Handlers run on the transport's single progress thread, one at a time, in arrival order per
// peer; a handler may call Send, Get, Connect or Close (they progress inline: never a
// deadlock), but it delays every later event while it runs. Set handlers before traffic
// starts (setting one later is safe, but messages that arrive before it are dropped).
//
// Failure: when a peer closes its endpoint (Close, or its transport is destroyed) or dies
// (its process is killed), the failure handler runs once for that peer with Unavailable
// saying why; later Send/Get to it return Unavailable naming the peer, never hang. Close()
// itself does not call the local failure handler. On the ucx backend a SIGKILLed peer on
// loopback is noticed when the kernel resets its TCP connections (measured: well under 1 s);
// a peer host that vanishes without a reset is caught by UCX keepalive (see ucx_am_transport.h).
//
// Memory: RegisterMemory pins [addr, addr+bytes) for remote reads and returns a handle whose
// remote_key() and address() a peer passes to Get. The handle must be destroyed before the
// memory is freed; it may outlive the transport. Get blocks until the bytes are copied.
//
// Thread-safety: all methods are thread-safe except the destructor, which must not race with
// other calls on the same transport (it may run while peers still send to it). The
// destructor closes every endpoint (peers see a failure), stops the progress thread and
// drops undelivered events; it never blocks for longer than a few seconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/status.h"

namespace tessera::comm {

using PeerId = uint64_t;  // local handle of a connected peer, unique within one transport

// Handler for active message `am_id`: `header` and `payload` are valid only during the call.
using AmHandler = std::function<void(PeerId from, std::span<const std::byte> header,
                                     std::span<const std::byte> payload)>;
// Accept (why is OK) and failure (why is Unavailable, naming the peer and the cause) events.
using PeerEventHandler = std::function<void(PeerId peer, const core::Status& why)>;

// Memory registered for remote reads; unregistered when destroyed.
class RegisteredMemory {
 public:
  virtual ~RegisteredMemory() = default;
  virtual std::span<const std::byte> remote_key() const = 0;  // opaque bytes to ship to peers
  virtual uint64_t address() const = 0;                       // remote address of byte 0
  virtual size_t size_bytes() const = 0;
};

class AmTransport {
 public:
  virtual ~AmTransport() = default;         // closes all endpoints and stops the progress thread
  virtual std::string address() const = 0;  // "127.0.0.1:PORT" where Listen()ed, else ""
  // Starts accepting connections on host:port (port 0 = any free; address() tells which).
  virtual core::Status Listen(const std::string& host, int port) = 0;
  // Connects to a listening transport; Unavailable naming the address after `timeout_s`.
  virtual core::StatusOr<PeerId> Connect(const std::string& address, double timeout_s) = 0;
  // Handlers: set before traffic starts. Called on the transport's one progress thread, one at
  // a time, in arrival order per peer. A handler may call Send/Close (never deadlocks).
  virtual void SetHandler(uint16_t am_id, AmHandler handler) = 0;
  virtual void SetAcceptHandler(PeerEventHandler on_accept) = 0;    // a peer connected to us
  virtual void SetFailureHandler(PeerEventHandler on_failure) = 0;  // peer died / closed
  // Sends an active message; thread-safe from any thread; returns once the buffers may be
  // reused. Messages from one sender to one peer arrive in send order (FIFO). Unavailable
  // naming the peer if it failed or was closed. Payloads of any size (MBs) must work.
  virtual core::Status Send(PeerId peer, uint16_t am_id, std::span<const std::byte> header,
                            std::span<const std::byte> payload) = 0;
  // Registers [addr, addr+bytes) for one-sided reads by peers.
  virtual core::StatusOr<std::unique_ptr<RegisteredMemory>> RegisterMemory(void* addr,
                                                                           size_t bytes) = 0;
  // Reads `bytes` at remote_address of a peer's registered memory (its remote_key) into
  // `local`; blocks until done. Thread-safe. Unavailable if the peer failed.
  virtual core::Status Get(PeerId peer, std::span<const std::byte> remote_key,
                           uint64_t remote_address, void* local, size_t bytes) = 0;
  // Closes the endpoint to a peer (the peer sees a failure/close event).
  virtual core::Status Close(PeerId peer) = 0;
  virtual std::string backend_name() const = 0;  // "fake" | "ucx"
};

// Destroys the transport `t` owns while `t` still points at it, then empties `t`. An owner whose
// handlers send through its unique_ptr member must use this, not t.reset(): reset() nulls the
// pointer before the destructor stops the progress thread, and a handler still running then
// dereferences null.
void DestroyTransport(std::unique_ptr<AmTransport>& t);

// "fake" or "ucx"; anything else is InvalidArgument naming the value and the choices. The ucx
// backend returns Internal with UCX's error string if UCX cannot start.
core::StatusOr<std::unique_ptr<AmTransport>> MakeAmTransport(const std::string& backend);

}  // namespace tessera::comm
