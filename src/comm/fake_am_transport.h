// The in-process backend of AmTransport (am_transport.h), for tests and single-process runs.
//
// Every fake transport of a process registers in one process-wide table under "fake:N" when it
// Listen()s (host is ignored; port 0 picks a fresh N, port P > 0 asks for "fake:P").
// Connect("fake:N") links two transports directly: Send copies the header and payload into
// the receiver's queue and returns; Get copies from the peer's registered memory under a
// lock, so a registration cannot vanish during a read. Each transport has one progress thread
// that delivers its queue in order. Destroying a transport is how a test kills a peer: every
// connected peer gets a failure event and later Send/Get to it return Unavailable.
//
// Beyond the common contract: remote keys are 16 bytes (transport id, region id); a Get
// outside the registered region, a key of another transport, or an unknown PeerId is
// InvalidArgument. Connect never waits (timeout_s is unused): an address nobody listens on is
// Unavailable at once. Thread-safety: as AmTransport; the destructor must not run on the
// transport's own progress thread (CHECK).
#pragma once

#include <memory>

#include "comm/am_transport.h"

namespace tessera::comm {

std::unique_ptr<AmTransport> MakeFakeAmTransport();

}  // namespace tessera::comm
