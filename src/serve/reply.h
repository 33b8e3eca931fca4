// Replies of the serving core: a status and a JSON body, the error body every server of the
// serving core answers with, and the one-line quoting of client values in error messages.
//
//   error body  {"error": {"message": one line, "code": HTTP status}}
//   QuoteValue  'text' (at most max_bytes bytes of it, cut at a UTF-8 boundary, then "...")
//   DumpReply   the body as compact JSON with invalid UTF-8 replaced by U+FFFD: an error
//               message may echo bytes of the request that are not UTF-8 (a path of %FF).
//   HttpStatusOf the status a job's failure is answered with: InvalidArgument 400,
//               Infeasible 507 (out of device memory), DeadlineExceeded and Unavailable 503,
//               anything else 500.
// Errors: none (DumpReply never throws). Thread-safety: pure functions; reentrant.
#pragma once

#include <cstddef>
#include <string>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::serve {

struct Reply {
  int status = 200;
  core::Json body;
  int retry_after_s = 0;  // > 0: a Retry-After header (429, 503: when to try again)
};

core::Json ErrorBody(int status, const std::string& message);
Reply ErrorReply(int status, const std::string& message);

std::string QuoteValue(const std::string& text, size_t max_bytes = 40);

std::string DumpReply(const core::Json& body);

int HttpStatusOf(const core::Status& status);

}  // namespace tessera::serve
