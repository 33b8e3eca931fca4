// UCX plumbing for the ucx AmTransport backend (ucx_am_transport.h): the UCP context (RAII,
// shared by the transport and its memory registrations), UCX status -> core::Status
// conversion, IPv4 socket addresses "host:port", and the remote-key wire format.
//
// UcxContext::Create configures UCX for this machine before ucp_init, through
// ucp_config_modify and only where the user left the matching UCX_* environment variable
// unset (so an explicit UCX_TLS=... always wins):
//   TLS=tcp,self        TCP over sockets (loopback and Ethernet alike); shared-memory and CMA
//                       transports are left out, as CMA fails under container ptrace rules.
//   TCP_KEEPCNT=3       with UCX's TCP_KEEPIDLE=10s and TCP_KEEPINTVL=2s: a peer host that
//                       vanishes without a reset is declared dead after about 16 s.
//   KEEPALIVE_INTERVAL  UCP's own endpoint keepalive (UCX default 20 s) stays as is.
// Thread-safety: UcxContext is created with mt_workers_shared, so RegisterMemory and its
// handles' destruction may run on any thread; workers are used by one thread each.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::comm::ucx_am {

// Internal "<what>: <ucs_status_string> (UCX status <n>)".
core::Status UcxError(const std::string& what, ucs_status_t status);

// True for the statuses UCX reports when a peer went away or cannot be reached (the
// transport maps them to Unavailable, not Internal).
bool IsPeerLoss(ucs_status_t status);

// Why a peer is lost, in words a user can act on, with UCX's own string.
std::string DescribePeerLoss(ucs_status_t status);

class UcxContext {
 public:
  // ucp_init with AM, RMA and WAKEUP; Internal with UCX's error string if UCX cannot start.
  static core::StatusOr<std::shared_ptr<UcxContext>> Create();
  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;
  ucp_context_h get() const { return context_; }

 private:
  explicit UcxContext(ucp_context_h context) : context_(context) {}
  ucp_context_h context_;
};

// An IPv4 socket address.
struct SockAddr {
  sockaddr_in addr{};
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&addr); }
  socklen_t size() const { return sizeof(addr); }
};

// host (dotted IPv4 or a name that resolves to IPv4) and port in [0, 65535]; InvalidArgument
// naming `what` and the value otherwise.
core::StatusOr<SockAddr> ResolveHostPort(const std::string& what, const std::string& host,
                                         int port);
// "host:port" as AmTransport::address() gives it.
core::StatusOr<SockAddr> ParseAddress(const std::string& what, const std::string& address);
// "a.b.c.d:port" ("?" for a non-IPv4 address).
std::string FormatSockAddr(const sockaddr_storage& storage);

// The remote key a ucx RegisteredMemory ships: a magic word, the region [base, base+bytes)
// and UCX's packed rkey. Parse checks the framing only (InvalidArgument otherwise).
struct RemoteKey {
  uint64_t base = 0;
  uint64_t bytes = 0;
  std::span<const std::byte> packed_rkey;
};
std::vector<std::byte> EncodeRemoteKey(uint64_t base, uint64_t bytes,
                                       std::span<const std::byte> packed_rkey);
core::StatusOr<RemoteKey> DecodeRemoteKey(std::span<const std::byte> key);

}  // namespace tessera::comm::ucx_am
