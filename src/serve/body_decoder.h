// BodyDecoder: decodes a request body as it arrives, by its Content-Encoding (identity, gzip,
// deflate or br), into at most `max_bytes` decoded bytes: the body limit holds for what the
// handler sees (a 64 KiB gzip body can decode to 64 MiB, and is refused as soon as the decoded
// bytes pass the limit, without decoding the rest).
//
// Feed appends the decoded bytes of one piece of the body to `out`; Finish says whether the
// compressed stream ended where the body ended.
// Errors: For returns InvalidArgument for a coding other than the four (the shell answers
// 415); Feed returns kTooLarge past max_bytes, kBad for bytes that do not decode.
// Thread-safety: one decoder per request, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::serve {

enum class DecodeResult { kOk, kTooLarge, kBad };

class BodyDecoder {
 public:
  virtual ~BodyDecoder() = default;
  // `coding` is the Content-Encoding header value ("" for none), matched case-insensitively.
  static core::StatusOr<std::unique_ptr<BodyDecoder>> For(std::string_view coding,
                                                          int64_t max_bytes);
  virtual DecodeResult Feed(std::string_view piece, std::string& out) = 0;
  virtual DecodeResult Finish() = 0;
};

}  // namespace tessera::serve
