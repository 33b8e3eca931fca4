// The UCX backend of AmTransport (am_transport.h): one UCP context and worker per transport,
// a listener on a socket address, endpoints created by socket address, active messages with
// ucp_am_send_nbx and RMA reads with ucp_get_nbx of memory registered by ucp_mem_map.
//
// Threads: each transport runs two threads. The UCX thread owns the worker (single-threaded
// UCX mode): it runs every UCX call -- the public methods post a command to it and wait for
// its completion -- and progresses the worker, sleeping on the worker's event fd when idle.
// Its receive callbacks only copy (or, above the rendezvous threshold, start
// ucp_am_recv_data_nbx into) an owned buffer and queue the event. The delivery thread -- the
// "progress thread" of the AmTransport contract -- runs the handlers one at a time in arrival
// order, waiting at the head of the queue for a rendezvous receive to finish. A handler may
// therefore call Send/Get/Connect/Close (they wait on the UCX thread, which is never blocked
// by a handler), and a slow handler never stalls other threads' calls.
//
// Wire format: one UCX AM id carries every message; its UCX header holds the user am_id and
// the user header's length, and the data is the user header followed by the payload (sent
// as a two-entry iov, no copy). Order: one endpoint per peer and one AM lane over TCP keep
// UCX's send order; the delivery queue keeps arrival order.
//
// Failures: endpoints use UCP_ERR_HANDLING_MODE_PEER. The endpoint error callback marks the
// peer failed, queues the failure event (Unavailable: "peer N (HOST:PORT): why") and
// force-closes the endpoint; later Send/Get return Unavailable with the same words. Close()
// closes the endpoint in flush mode; UCX's connection manager then tells the peer
// (CONNECTION_RESET on its side). A killed peer process on loopback is noticed when the kernel
// resets its sockets (well under 1 s). A peer host that vanishes without a reset is caught by
// TCP keepalive -- UCX_TCP_KEEPIDLE=10s, UCX_TCP_KEEPINTVL=2s, and UCX_TCP_KEEPCNT=3 set here
// unless the environment sets it (about 16 s) -- and by UCP's keepalive
// (UCX_KEEPALIVE_INTERVAL, 20 s by default). See ucx_util.h for the UCX settings this backend
// makes (UCX_TLS=tcp,self unless set) and how to override them.
//
// Connect creates the endpoint and flushes it: the flush completes once the listener has
// accepted (its accept event is queued before any message of the connection), fails with
// Unavailable naming the address when nobody listens, and is abandoned (endpoint
// force-closed) after timeout_s. Addresses are IPv4 "HOST:PORT".
//
// Beyond the common contract: remote keys carry the registered region, so a Get outside it is
// InvalidArgument (checked locally, before UCX is asked); an unknown PeerId is
// InvalidArgument; Listen on a port in use is Unavailable. The destructor must not run on the
// delivery thread (CHECK); it closes every endpoint in flush mode and waits at most 2 s for
// the closes before destroying the worker. RegisteredMemory handles keep the UCP context
// alive, so they may outlive the transport.
#pragma once

#include <memory>

#include "comm/am_transport.h"

namespace tessera::comm {

core::StatusOr<std::unique_ptr<AmTransport>> MakeUcxAmTransport();

}  // namespace tessera::comm
