// Conformance checks for AmTransport backends (test support, not part of tessera_comm).
// The same checks run on every backend (am_transport_test.cc: fake and ucx), so all are held
// to the contract of am_transport.h.
//
// A check gets a factory for fresh transports of the backend under test and a seed; it makes
// its own transports (listening on 127.0.0.1 only), never stops at the first failure, and
// returns OK or Internal listing (up to a few of) the failures seen. Message and memory
// contents are seeded pseudo-random bytes; the receiver compares them with bytes it computes
// from the seed (a plain oracle independent of the backend). Waits for events are bounded by a
// generous deadline (kAmCheckDeadlineS) that fails the check instead of hanging.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/am_transport.h"

namespace tessera::comm::testing {

inline constexpr double kAmCheckDeadlineS = 60.0;

using AmTransportFactory = std::function<core::StatusOr<std::unique_ptr<AmTransport>>()>;
using AmCheckFn = std::function<core::Status(const AmTransportFactory& make, uint64_t seed)>;

struct AmNamedCheck {
  std::string name;
  AmCheckFn fn;
};

// Listen/Connect/accept events; address() before and after Listen; Listen twice fails.
core::Status CheckAmConnectAccept(const AmTransportFactory& make, uint64_t seed);
// Messages both ways with header and payload sizes 0, 1 B, 64 KiB and 8 MiB (bytes compared).
core::Status CheckAmSendBothWays(const AmTransportFactory& make, uint64_t seed);
// 10^4 messages of mixed sizes (some over the eager limit) arrive in send order.
core::Status CheckAmFifo(const AmTransportFactory& make, uint64_t seed);
// Four threads send concurrently; per-thread order and the total are kept.
core::Status CheckAmConcurrentSenders(const AmTransportFactory& make, uint64_t seed);
// 1000 ping-pong rounds where each handler replies from inside the handler (some payloads
// large, so both sides send big messages from handlers at once).
core::Status CheckAmPingPongInHandler(const AmTransportFactory& make, uint64_t seed);
// RegisterMemory + Get of 1 B .. 8 MiB at offsets, from two threads and from a handler.
core::Status CheckAmRegisterGet(const AmTransportFactory& make, uint64_t seed);
// Close: the peer's failure handler runs once; Send both ways returns Unavailable.
core::Status CheckAmClose(const AmTransportFactory& make, uint64_t seed);
// Destroying a transport (while a thread of the peer keeps sending to it): the peer sees a
// failure, its Send/Get return Unavailable, nothing hangs.
core::Status CheckAmDestroyedPeer(const AmTransportFactory& make, uint64_t seed);
// Connect to an address nobody listens on any more: Unavailable naming it; a malformed
// address: InvalidArgument; an unknown PeerId: InvalidArgument.
core::Status CheckAmBadAddresses(const AmTransportFactory& make, uint64_t seed);

// All of the above, in the order they are run.
std::vector<AmNamedCheck> AmConformanceChecks();

// Seeded bytes: byte i of stream `stream` (test support shared with the tests).
std::vector<std::byte> AmTestBytes(uint64_t seed, uint64_t stream, size_t bytes);

}  // namespace tessera::comm::testing
