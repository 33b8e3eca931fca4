#include "serve/abuse_requests.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <vector>

namespace tessera::serve {
namespace {

template <typename T>
const T& Pick(core::Rng& rng, const std::vector<T>& v) {
  return v[static_cast<size_t>(rng.Below(v.size()))];
}

constexpr size_t kGzipBombBytes = size_t{32} << 20;

}  // namespace

std::string AbuseRequestBuilder::Head(const std::string& method, const std::string& target,
                                      const std::string& extra) const {
  return method + " " + target + " HTTP/1.1\r\nHost: " + c.host + ":" + std::to_string(c.port) +
         "\r\nConnection: close\r\n" + extra;
}

std::string AbuseRequestBuilder::Request(const std::string& method, const std::string& target,
                                         const std::string& body) const {
  return Head(method, target,
              "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                  "\r\n\r\n") +
         body;
}

std::string RepeatText(const std::string& unit, int64_t n) {
  std::string s;
  s.reserve(unit.size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) s += unit;
  return s;
}

const std::string& GzipBomb() {
  static const std::string bomb = [] {
    z_stream z{};
    deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);  // gzip
    const std::string zeros(1 << 20, '\0');
    std::string out(kGzipBombBytes / 512, '\0');
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    for (size_t done = 0; done < kGzipBombBytes; done += zeros.size()) {
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
      z.avail_in = static_cast<uInt>(zeros.size());
      deflate(&z, done + zeros.size() >= kGzipBombBytes ? Z_FINISH : Z_NO_FLUSH);
    }
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
  }();
  return bomb;
}

std::string TruncatedBody(core::Rng& rng, const std::string& valid) {
  return valid.substr(0, static_cast<size_t>(rng.Below(valid.size())));
}

std::string GarbageBody(core::Rng& rng) {
  std::string s(1 + rng.Below(256), '\0');
  for (char& ch : s) ch = static_cast<char>(rng.Below(256));
  return s;
}

std::string DeepNestingBody(core::Rng& rng, int64_t limit) {
  // Deeper than a 256-level parser when the body limit allows it.
  const int64_t most = (limit - 64) / 6;
  const int64_t least = std::min<int64_t>(300, most);
  const int64_t depth =
      least + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(most - least + 1)));
  switch (rng.Below(3)) {
    case 0:
      return RepeatText("[", depth) + RepeatText("]", depth);
    case 1:
      return RepeatText("{\"a\":", depth) + "1" + RepeatText("}", depth);
    default:
      return RepeatText("[", depth);  // never closed
  }
}

std::string ChunkedOverLimit(const AbuseRequestBuilder& b, const std::string& path) {
  std::string r =
      b.Head("POST", path, "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
  const int64_t chunk = 4096;
  for (int64_t sent = 0; sent <= b.c.max_body_bytes; sent += chunk) {
    r += fmt::format("{:x}\r\n", chunk) + std::string(chunk, 'p') + "\r\n";
  }
  return r + "0\r\n\r\n";
}

std::string UriTooLong(const AbuseRequestBuilder& b, core::Rng& rng) {
  return b.Get("/" + std::string(8200 + rng.Below(8000), 'a'));
}

std::string BadRequestLine(core::Rng& rng) {
  return Pick(rng,
              std::vector<std::string>{
                  "garbage\r\n\r\n", "GET\r\n\r\n", "GET /healthz\r\n\r\n", "\r\n\r\n",
                  "GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n",
                  std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + "\r\n\r\n"});
}

std::string BadContentLength(const AbuseRequestBuilder& b, core::Rng& rng, const std::string& path,
                             const std::string& body) {
  // Not a decimal number of bytes: a framing error (RFC 9112 6.3), 400.
  return b.Head("POST", path,
                "Content-Length: " + Pick(rng, std::vector<std::string>{"abc", "1e3", "-5"}) +
                    "\r\n\r\n") +
         body;
}

std::string HugeContentLength(const AbuseRequestBuilder& b, core::Rng& rng, const std::string& path,
                              const std::string& body) {
  // A number past any body limit: refused (413) before a byte of the body is read.
  return b.Head("POST", path,
                "Content-Length: " +
                    Pick(rng, std::vector<std::string>{"18446744073709551615",
                                                       "99999999999999999999999"}) +
                    "\r\n\r\n") +
         body;
}

std::string Encoded(const AbuseRequestBuilder& b, const std::string& path,
                    const std::string& encoding, const std::string& body) {
  return b.Head("POST", path,
                fmt::format("Content-Type: application/json\r\nContent-Encoding: {}\r\n"
                            "Content-Length: {}\r\n\r\n",
                            encoding, body.size())) +
         body;
}

std::string HeadersOnly(const AbuseRequestBuilder& b, const std::string& path,
                        const std::string& body) {
  return b.Head("POST", path,
                "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\n\r\n");
}

std::string HalfBody(const AbuseRequestBuilder& b, const std::string& path,
                     const std::string& body) {
  const std::string whole = b.Request("POST", path, body);
  return whole.substr(0, whole.size() - body.size() / 2);
}

std::string AbuseObjectText(const AbuseFields& fields) {
  std::string s = "{";
  for (const auto& [k, v] : fields) s += (s.size() > 1 ? ", \"" : "\"") + k + "\": " + v;
  return s + "}";
}

AbuseFields WithAbuseField(AbuseFields fields, const std::string& key, const std::string& value) {
  for (auto& [k, v] : fields) {
    if (k == key) {
      v = value;
      return fields;
    }
  }
  fields.push_back({key, value});
  return fields;
}

const std::vector<std::string>& NonJsonNumbers() {
  static const std::vector<std::string> v = {"NaN", "-NaN", "Infinity", "-Infinity", "nan",
                                             "inf", "0x10", "+1",       "01",        ".5",
                                             "1.",  "1e",   "undefined"};
  return v;
}

const std::vector<std::string>& BadUtf8Strings() {
  static const std::vector<std::string> v = {
      "\"\xC3\x28\"", "\"\xFF\xFE\"", "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"",
      "\"\xC0\xAF\"", "\"\\uD800\"",  "\"a\\uDC00b\"",    "\"\xE2\x82\""};
  return v;
}

}  // namespace tessera::serve
