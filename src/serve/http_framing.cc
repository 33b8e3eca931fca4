#include "serve/http_framing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "serve/reply.h"

namespace tessera::serve {
namespace {

std::string LowerTrimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  std::string out = s.substr(b, e - b);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() <= 19 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// A media type without its parameters: "application/json; charset=utf-8" -> "application/json".
std::string MediaType(const std::string& value) {
  return LowerTrimmed(value.substr(0, value.find(';')));
}

bool AcceptedContentType(const std::string& type) {
  // JSON, and what curl -d and plain-text clients send for a JSON body.
  return type == "application/json" || type == "text/plain" ||
         type == "application/x-www-form-urlencoded" ||
         (type.size() > 5 && type.compare(type.size() - 5, 5, "+json") == 0);
}

HeadRefusal Refuse(int status, std::string message, bool close, const char* counter) {
  return {status, std::move(message), close, counter};
}

}  // namespace

bool HeaderNameIs(const std::string& name, const char* lower) {
  size_t i = 0;
  for (; i < name.size() && lower[i] != '\0'; ++i) {
    if (std::tolower(static_cast<unsigned char>(name[i])) != lower[i]) return false;
  }
  return i == name.size() && lower[i] == '\0';
}

std::optional<HeadRefusal> CheckRequestHead(const RequestHead& head, const HttpOptions& options,
                                            bool has_body_route) {
  const int64_t line_bytes =
      static_cast<int64_t>(head.method.size() + head.target.size() + 12);  // " HTTP/1.1\r\n"
  if (line_bytes > kMaxRequestLineBytes) {
    return Refuse(414,
                  fmt::format("request line: {} bytes, at most {} (the request target is too long)",
                              line_bytes, kMaxRequestLineBytes),
                  true, "uri_too_long");
  }
  if (static_cast<int64_t>(head.headers.size()) > options.max_header_count) {
    return Refuse(431,
                  fmt::format("header fields: got {}, at most max_header_count = {}",
                              head.headers.size(), options.max_header_count),
                  true, "max_header_count");
  }
  int64_t header_bytes = line_bytes;
  std::vector<std::string> lengths;
  std::vector<std::string> codings;
  std::string content_encoding, content_type;
  bool has_content_type = false;
  for (const auto& [name, value] : head.headers) {
    header_bytes += static_cast<int64_t>(name.size() + value.size() + 4);
    if (HeaderNameIs(name, "content-length")) lengths.push_back(LowerTrimmed(value));
    if (HeaderNameIs(name, "transfer-encoding")) codings.push_back(LowerTrimmed(value));
    if (HeaderNameIs(name, "content-encoding")) content_encoding = LowerTrimmed(value);
    if (HeaderNameIs(name, "content-type")) {
      has_content_type = true;
      content_type = MediaType(value);
    }
  }
  if (header_bytes > options.max_header_bytes) {
    return Refuse(431,
                  fmt::format("request head: {} bytes, at most max_header_bytes = {}", header_bytes,
                              options.max_header_bytes),
                  true, "max_header_bytes");
  }
  if (!codings.empty() && !lengths.empty()) {
    return Refuse(400,
                  "framing: Transfer-Encoding and Content-Length in one request (RFC 9112 6.1); "
                  "send one of them",
                  true, "framing");
  }
  for (const std::string& c : codings) {
    if (c != "chunked") {
      return Refuse(400,
                    "Transfer-Encoding: got " + QuoteValue(c) +
                        ", the only coding allowed is "
                        "chunked",
                    true, "framing");
    }
  }
  if (codings.size() > 1) {
    return Refuse(400, "framing: Transfer-Encoding: chunked sent more than once", true, "framing");
  }
  for (const std::string& l : lengths) {
    if (!AllDigits(l)) {
      return Refuse(400,
                    "Content-Length: got " + QuoteValue(l) + ", must be a decimal number of bytes",
                    true, "framing");
    }
    if (l != lengths.front()) {
      return Refuse(400,
                    "framing: differing Content-Length values " + QuoteValue(lengths.front()) +
                        " and " + QuoteValue(l) + " (RFC 9112 6.3)",
                    true, "framing");
    }
  }
  if (!has_body_route) return std::nullopt;
  if (!content_encoding.empty() && content_encoding != "identity" && content_encoding != "gzip" &&
      content_encoding != "x-gzip" && content_encoding != "deflate" && content_encoding != "br") {
    return Refuse(415,
                  "Content-Encoding: got " + QuoteValue(content_encoding) +
                      ", must be gzip, deflate, br or none",
                  true, "unsupported_media");
  }
  if (has_content_type && !AcceptedContentType(content_type)) {
    return Refuse(415,
                  "Content-Type: got " + QuoteValue(content_type) +
                      ", must be application/json (or text/plain, "
                      "application/x-www-form-urlencoded with a JSON body)",
                  true, "unsupported_media");
  }
  return std::nullopt;
}

core::Status ValidateHttpOptions(const HttpOptions& o) {
  auto bad = [](const char* name, auto value, const char* allowed) {
    return core::InvalidArgument(fmt::format("http: {} = {}, must be {}", name, value, allowed));
  };
  if (o.port < 0 || o.port > 65535) return bad("port", o.port, "in [0, 65535]");
  if (o.max_body_bytes < 1) return bad("max_body_bytes", o.max_body_bytes, ">= 1");
  if (o.http_threads < 1 || o.http_threads > 1024) {
    return bad("http_threads", o.http_threads, "in [1, 1024]");
  }
  if (!(o.header_deadline_s > 0)) return bad("header_deadline_s", o.header_deadline_s, "> 0");
  if (!(o.body_deadline_s > 0)) return bad("body_deadline_s", o.body_deadline_s, "> 0");
  if (o.max_header_bytes < 1024 || o.max_header_bytes > (int64_t{1} << 20)) {
    return bad("max_header_bytes", o.max_header_bytes, "in [1024, 1 MiB]");
  }
  if (o.max_header_count < 8) return bad("max_header_count", o.max_header_count, ">= 8");
  if (o.max_connections < 1) return bad("max_connections", o.max_connections, ">= 1");
  if (!(o.drain_deadline_s >= 0)) return bad("drain_deadline_s", o.drain_deadline_s, ">= 0");
  if (!(o.handler_idle_s >= 0) || o.handler_idle_s > 3600) {
    return bad("handler_idle_s", o.handler_idle_s, "in [0, 3600] (0: threads stay)");
  }
  return ValidateHeapOptions(o.heap);
}

}  // namespace tessera::serve
