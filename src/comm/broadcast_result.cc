#include "comm/broadcast_result.h"

#include <fmt/format.h>

namespace tessera::comm {

core::Status NotOnRoot() {
  return core::FailedPrecondition("BroadcastResult: a result that is only read on the root");
}

namespace internal {

std::string EncodeResult(const core::Status& status, const std::string& payload) {
  std::string wire(1, static_cast<char>(status.code()));
  wire += status.ok() ? payload : status.message();
  return wire;
}

core::Status DecodeResult(const std::string& wire, std::string* payload) {
  constexpr int kLastCode = static_cast<int>(core::StatusCode::kDeadlineExceeded);
  const int code = wire.empty() ? -1 : static_cast<unsigned char>(wire[0]);
  if (code < 0 || code > kLastCode) {
    return core::Internal(fmt::format(
        "BroadcastResult: received a malformed result (status code byte {}, must be 0..{})", code,
        kLastCode));
  }
  if (code != 0) return core::Status(static_cast<core::StatusCode>(code), wire.substr(1));
  *payload = wire.substr(1);
  return core::Status::Ok();
}

std::string DumpJson(const core::Json& j) {
  return j.dump(-1, ' ', false, core::Json::error_handler_t::replace);
}

}  // namespace internal

StatusOr<std::string> BroadcastResult(Communicator& world, int root,
                                      const StatusOr<std::string>& on_root) {
  return BroadcastResult<std::string>(
      world, root, on_root, [](const std::string& s) { return s; },
      [](const std::string& s) -> StatusOr<std::string> { return s; });
}

StatusOr<core::Json> BroadcastResult(Communicator& world, int root,
                                     const StatusOr<core::Json>& on_root) {
  return BroadcastResult<core::Json>(
      world, root, on_root, [](const core::Json& j) { return internal::DumpJson(j); },
      [](const std::string& text) { return core::ParseJson(text, "BroadcastResult"); });
}

}  // namespace tessera::comm
