// The checks the HTTP shell (http_server.h) makes on a request head before any handler sees
// it, per RFC 9112 and the shell's limits: framing (Transfer-Encoding with Content-Length,
// differing Content-Length values, a Transfer-Encoding other than chunked, a Content-Length
// that is not a number), the request line's length (414), the header count and bytes (431),
// and for body routes the Content-Encoding and Content-Type (415).
//
// A refusal carries its status, a one-line message naming the limit or the field and its
// allowed value, and whether the connection must close after it (framing errors: the next
// request's start is unknown).
// Errors: none (a refusal is a value). Thread-safety: pure functions; reentrant.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/http_options.h"

namespace tessera::serve {

struct HeadRefusal {
  int status = 400;
  std::string message;
  bool close = true;
  std::string counter;  // the /v1/metrics counter it counts under, e.g. "framing"
};

struct RequestHead {
  std::string method;
  std::string target;  // the request target as sent (path and query)
  std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent
};

// The first refusal of `head` under `options`, or nullopt. `has_body_route`: the route reads
// a body (Content-Encoding and Content-Type are checked).
std::optional<HeadRefusal> CheckRequestHead(const RequestHead& head, const HttpOptions& options,
                                            bool has_body_route);

// Case-insensitive ASCII comparison of header names.
bool HeaderNameIs(const std::string& name, const char* lower);

}  // namespace tessera::serve
