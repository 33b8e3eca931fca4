#include "serve/reply.h"

namespace tessera::serve {

core::Json ErrorBody(int status, const std::string& message) {
  return {{"error", {{"message", message}, {"code", status}}}};
}

Reply ErrorReply(int status, const std::string& message) {
  return {status, ErrorBody(status, message)};
}

std::string QuoteValue(const std::string& text, size_t max_bytes) {
  std::string q = "'";
  q += text.size() > max_bytes ? core::Utf8Prefix(text, max_bytes) + "..." : text;
  return q + "'";
}

std::string DumpReply(const core::Json& body) {
  return body.dump(-1, ' ', false, core::Json::error_handler_t::replace);
}

int HttpStatusOf(const core::Status& status) {
  switch (status.code()) {
    case core::StatusCode::kInvalidArgument:
      return 400;
    case core::StatusCode::kInfeasible:
      return 507;
    case core::StatusCode::kDeadlineExceeded:
    case core::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

}  // namespace tessera::serve
