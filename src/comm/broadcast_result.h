// BroadcastResult: sends a result computed on one rank, a value or an error, to every rank
// of a communicator, so that every rank gets the same StatusOr<T>: the same value, or the
// same Status code and message. Use it for "plan on rank 0, run the plan everywhere":
//
//   StatusOr<core::Json> plan = world.rank() == 0 ? MakePlan(...) : comm::NotOnRoot();
//   ASSIGN_OR_RETURN(core::Json j, comm::BroadcastResult(world, 0, plan));
//
// `on_root` is read on `root` only (other ranks pass anything, e.g. NotOnRoot()). The value
// travels serialized (a string) and is parsed on every rank, the root included, so all ranks
// hold what the parse produced; a parse error therefore also reaches every rank alike.
// Wire format (over BroadcastString): one byte with the StatusCode, then the serialized
// value (OK) or the error message. Errors of the broadcast itself (e.g. root out of range:
// InvalidArgument) are returned instead, as by any collective.
//
// Collective over `world`; thread-safety as Communicator.
#pragma once

#include <string>
#include <utility>

#include "comm/broadcast_string.h"
#include "comm/communicator.h"
#include "core/json_util.h"
#include "core/status.h"

namespace tessera::comm {

// A placeholder for `on_root` on ranks other than the root (FailedPrecondition, never read).
core::Status NotOnRoot();

namespace internal {
// Root side: the wire string of a result (code byte + payload or message).
std::string EncodeResult(const core::Status& status, const std::string& payload);
// Every rank: the Status carried by `wire`; when OK, *payload is the serialized value.
core::Status DecodeResult(const std::string& wire, std::string* payload);
// Compact JSON text; invalid UTF-8 in strings is replaced (U+FFFD) instead of throwing.
std::string DumpJson(const core::Json& j);
}  // namespace internal

// Generic form: serialize is std::string(const T&); parse is StatusOr<T>(const std::string&).
template <typename T, typename Serialize, typename Parse>
StatusOr<T> BroadcastResult(Communicator& world, int root, const StatusOr<T>& on_root,
                            Serialize serialize, Parse parse) {
  std::string wire;
  if (world.rank() == root) {
    wire = on_root.ok() ? internal::EncodeResult(core::Status::Ok(), serialize(*on_root))
                        : internal::EncodeResult(on_root.status(), "");
  }
  RETURN_IF_ERROR(BroadcastString(world, &wire, root));
  std::string payload;
  RETURN_IF_ERROR(internal::DecodeResult(wire, &payload));
  return parse(payload);
}

// A string result (sent as is).
StatusOr<std::string> BroadcastResult(Communicator& world, int root,
                                      const StatusOr<std::string>& on_root);
// A JSON result (sent as compact text; numbers round-trip exactly).
StatusOr<core::Json> BroadcastResult(Communicator& world, int root,
                                     const StatusOr<core::Json>& on_root);

// A type with `core::Json ToJson(const T&)` (found by argument-dependent lookup) and a parse
// function StatusOr<T>(const core::Json&).
template <typename T, typename ParseJson>
StatusOr<T> BroadcastResult(Communicator& world, int root, const StatusOr<T>& on_root,
                            ParseJson parse) {
  return BroadcastResult<T>(
      world, root, on_root, [](const T& v) { return internal::DumpJson(ToJson(v)); },
      [&](const std::string& text) -> StatusOr<T> {
        ASSIGN_OR_RETURN(core::Json j, core::ParseJson(text, "BroadcastResult"));
        return parse(j);
      });
}

}  // namespace tessera::comm
