#include "comm/ucx_util.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>

#include <cstdlib>
#include <cstring>

namespace tessera::comm::ucx_am {

namespace {

constexpr uint64_t kRemoteKeyMagic = 0x314b5843555254ULL;  // "TRUCXK1"
constexpr size_t kRemoteKeyHeaderBytes = 3 * sizeof(uint64_t);

// ucp_config_modify(name, value) unless the user set the environment variable `env`. A
// transport's key goes without its prefix (KEEPCNT for UCX_TCP_KEEPCNT): UCP applies such keys
// to every transport that has them.
core::Status DefaultUnlessSet(ucp_config_t* config, const char* env, const char* name,
                              const char* value) {
  if (std::getenv(env) != nullptr) return core::Status::Ok();
  const ucs_status_t status = ucp_config_modify(config, name, value);
  if (status != UCS_OK)
    return UcxError(fmt::format("ucp_config_modify({}={})", name, value), status);
  return core::Status::Ok();
}

}  // namespace

core::Status UcxError(const std::string& what, ucs_status_t status) {
  return core::Internal(
      fmt::format("{}: {} (UCX status {})", what, ucs_status_string(status), int{status}));
}

bool IsPeerLoss(ucs_status_t status) {
  switch (status) {
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_CANCELED:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_TIMED_OUT:
      return true;
    default:
      return false;
  }
}

std::string DescribePeerLoss(ucs_status_t status) {
  const char* words = "the connection failed";
  switch (status) {
    case UCS_ERR_CONNECTION_RESET:
      words = "the connection was reset (the peer closed it, or its process exited or was killed)";
      break;
    case UCS_ERR_ENDPOINT_TIMEOUT:
      // UCX 1.13 also reports a SIGKILLed peer on loopback this way (seen here).
      words =
          "the peer stopped answering (its process died, its host vanished or the network is down)";
      break;
    case UCS_ERR_UNREACHABLE:
      words = "unreachable (nothing listens there, or no route)";
      break;
    case UCS_ERR_REJECTED:
      words = "the peer rejected the connection (it is shutting down)";
      break;
    case UCS_ERR_CANCELED:
      words = "the operation was canceled (the endpoint is closing)";
      break;
    default:
      break;
  }
  return fmt::format("{} [UCX: {}]", words, ucs_status_string(status));
}

core::StatusOr<std::shared_ptr<UcxContext>> UcxContext::Create() {
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) return UcxError("ucp_config_read", status);
  core::Status configured = DefaultUnlessSet(config, "UCX_TLS", "TLS", "tcp,self");
  if (configured.ok()) configured = DefaultUnlessSet(config, "UCX_TCP_KEEPCNT", "KEEPCNT", "3");
  if (!configured.ok()) {
    ucp_config_release(config);
    return configured;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 1;
  ucp_context_h context = nullptr;
  status = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (status != UCS_OK) return UcxError("am transport backend 'ucx': ucp_init", status);
  return std::shared_ptr<UcxContext>(new UcxContext(context));
}

UcxContext::~UcxContext() { ucp_cleanup(context_); }

core::StatusOr<SockAddr> ResolveHostPort(const std::string& what, const std::string& host,
                                         int port) {
  if (port < 0 || port > 65535) {
    return core::InvalidArgument(
        fmt::format("{}: port: got {}, must be in [0, 65535]", what, port));
  }
  SockAddr out;
  out.addr.sin_family = AF_INET;
  out.addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &out.addr.sin_addr) == 1) return out;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (host.empty() || getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return core::InvalidArgument(fmt::format(
        "{}: host: got '{}', must be an IPv4 address or a name that resolves to one (e.g. "
        "127.0.0.1)",
        what, host));
  }
  out.addr.sin_addr = reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr;
  freeaddrinfo(found);
  return out;
}

core::StatusOr<SockAddr> ParseAddress(const std::string& what, const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) {
    return core::InvalidArgument(fmt::format(
        "{}: address: got '{}', a ucx address looks like HOST:PORT (e.g. 127.0.0.1:13337)", what,
        address));
  }
  const std::string port_text = address.substr(colon + 1);
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (end == port_text.c_str() || *end != '\0' || port <= 0 || port > 65535) {
    return core::InvalidArgument(fmt::format(
        "{}: address: got '{}', the port must be a number in [1, 65535]", what, address));
  }
  return ResolveHostPort(what, address.substr(0, colon), static_cast<int>(port));
}

std::string FormatSockAddr(const sockaddr_storage& storage) {
  if (storage.ss_family != AF_INET) return "?";
  const auto& in = reinterpret_cast<const sockaddr_in&>(storage);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
  return fmt::format("{}:{}", text, ntohs(in.sin_port));
}

std::vector<std::byte> EncodeRemoteKey(uint64_t base, uint64_t bytes,
                                       std::span<const std::byte> packed_rkey) {
  std::vector<std::byte> key(kRemoteKeyHeaderBytes + packed_rkey.size());
  const uint64_t words[3] = {kRemoteKeyMagic, base, bytes};
  std::memcpy(key.data(), words, sizeof(words));
  if (!packed_rkey.empty()) {
    std::memcpy(key.data() + kRemoteKeyHeaderBytes, packed_rkey.data(), packed_rkey.size());
  }
  return key;
}

core::StatusOr<RemoteKey> DecodeRemoteKey(std::span<const std::byte> key) {
  uint64_t words[3] = {0, 0, 0};
  if (key.size() >= kRemoteKeyHeaderBytes) std::memcpy(words, key.data(), sizeof(words));
  if (key.size() < kRemoteKeyHeaderBytes || words[0] != kRemoteKeyMagic) {
    return core::InvalidArgument(
        fmt::format("Get: remote_key: got {} bytes that are not a ucx remote key (pass the "
                    "remote_key() of the peer's RegisteredMemory unchanged)",
                    key.size()));
  }
  RemoteKey out;
  out.base = words[1];
  out.bytes = words[2];
  out.packed_rkey = key.subspan(kRemoteKeyHeaderBytes);
  return out;
}

}  // namespace tessera::comm::ucx_am
