// The HTTP-level abuse requests any system's abuse suite (abuse_suite.h) can draw on, whatever
// its request schema: raw request text with Host and "Connection: close", bodies that are not
// JSON (cut, random bytes, nesting past any parser's depth), bodies over the limit sent
// chunked, request lines over the URI limit or malformed, lying Content-Length headers, gzip
// bombs and unknown encodings, and requests cut off for a disconnect. A suite supplies a valid
// body and its route; each function draws its variant from `rng` (so a plan stays seeded).
//
// Units: bytes. Errors: none (every function returns request or body text). Thread-safety:
// reentrant; GzipBomb is computed once, thread-safely.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "serve/abuse_suite.h"

namespace tessera::serve {

// Raw requests to the context's host and port, every one with "Connection: close".
struct AbuseRequestBuilder {
  const AbusePlanContext& c;

  // The request line and headers; `extra` ends the head ("...\r\n\r\n") or adds headers.
  std::string Head(const std::string& method, const std::string& target,
                   const std::string& extra = "") const;
  // A JSON body with its Content-Length.
  std::string Request(const std::string& method, const std::string& target,
                      const std::string& body) const;
  std::string Get(const std::string& target) const { return Head("GET", target, "\r\n"); }
};

// A JSON object's fields as (key, raw JSON value) pairs, in order: the bodies suites vary.
using AbuseFields = std::vector<std::pair<std::string, std::string>>;
// {"k": v, ...} in the fields' order.
std::string AbuseObjectText(const AbuseFields& fields);
// `fields` with `key` set to the raw JSON `value` (added when missing).
AbuseFields WithAbuseField(AbuseFields fields, const std::string& key, const std::string& value);
// One of `v`, drawn from `rng`.
template <typename T>
const T& PickVariant(core::Rng& rng, const std::vector<T>& v) {
  return v[static_cast<size_t>(rng.Below(v.size()))];
}
// Raw values a JSON parser must refuse where a number goes (NaN, Infinity, 0x10, 01, .5, ...).
const std::vector<std::string>& NonJsonNumbers();
// JSON strings whose bytes are not valid UTF-8, or that hold a lone surrogate.
const std::vector<std::string>& BadUtf8Strings();

// `unit` n times.
std::string RepeatText(const std::string& unit, int64_t n);

// 32 MiB of zeros, gzip-compressed (about 32 KiB); computed once.
const std::string& GzipBomb();

// Bodies that are no JSON: `valid` cut at a random byte; 1..256 random bytes; nesting of 300
// levels up to what `limit` allows ([..], {"a": ..} or never closed).
std::string TruncatedBody(core::Rng& rng, const std::string& valid);
std::string GarbageBody(core::Rng& rng);
std::string DeepNestingBody(core::Rng& rng, int64_t limit);

// POST `path` chunked, 4 KiB chunks, past the body limit.
std::string ChunkedOverLimit(const AbuseRequestBuilder& b, const std::string& path);
// GET of a path over 8 KiB (8200..16199 bytes).
std::string UriTooLong(const AbuseRequestBuilder& b, core::Rng& rng);
// A malformed request line (garbage, no target or version, an extra word, TLS bytes).
std::string BadRequestLine(core::Rng& rng);
// POST `path` with `body` under a Content-Length that is not a number ("abc", "1e3", "-5").
std::string BadContentLength(const AbuseRequestBuilder& b, core::Rng& rng, const std::string& path,
                             const std::string& body);
// POST `path` with `body` under a Content-Length of 2^64 - 1 or more.
std::string HugeContentLength(const AbuseRequestBuilder& b, core::Rng& rng, const std::string& path,
                              const std::string& body);
// POST `path` with `body` under a Content-Encoding (the body sent as is).
std::string Encoded(const AbuseRequestBuilder& b, const std::string& path,
                    const std::string& encoding, const std::string& body);
// The head of a POST of `body` to `path`, without the body (the client then closes).
std::string HeadersOnly(const AbuseRequestBuilder& b, const std::string& path,
                        const std::string& body);
// A POST of `body` to `path` cut after half the body (the client then closes).
std::string HalfBody(const AbuseRequestBuilder& b, const std::string& path,
                     const std::string& body);

}  // namespace tessera::serve
