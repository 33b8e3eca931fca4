#include "serve/body_decoder.h"

#include <brotli/decode.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace tessera::serve {
namespace {

class IdentityDecoder final : public BodyDecoder {
 public:
  explicit IdentityDecoder(int64_t max_bytes) : max_bytes_(max_bytes) {}
  DecodeResult Feed(std::string_view piece, std::string& out) override {
    if (static_cast<int64_t>(out.size() + piece.size()) > max_bytes_)
      return DecodeResult::kTooLarge;
    out.append(piece);
    return DecodeResult::kOk;
  }
  DecodeResult Finish() override { return DecodeResult::kOk; }

 private:
  int64_t max_bytes_;
};

class ZlibDecoder final : public BodyDecoder {
 public:
  // window_bits: 15 + 32 detects zlib or gzip headers (deflate and gzip).
  explicit ZlibDecoder(int64_t max_bytes) : max_bytes_(max_bytes) {
    ok_ = inflateInit2(&z_, 15 + 32) == Z_OK;
  }
  ~ZlibDecoder() override {
    if (ok_) inflateEnd(&z_);
  }
  DecodeResult Feed(std::string_view piece, std::string& out) override {
    if (!ok_ || (ended_ && !piece.empty())) return DecodeResult::kBad;
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(piece.data()));
    z_.avail_in = static_cast<uInt>(piece.size());
    char buf[16384];
    while (z_.avail_in > 0 && !ended_) {
      z_.next_out = reinterpret_cast<Bytef*>(buf);
      z_.avail_out = sizeof(buf);
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return DecodeResult::kBad;
      const size_t n = sizeof(buf) - z_.avail_out;
      if (static_cast<int64_t>(out.size() + n) > max_bytes_) return DecodeResult::kTooLarge;
      out.append(buf, n);
      if (rc == Z_STREAM_END) ended_ = true;
      if (rc == Z_BUF_ERROR && n == 0) break;
    }
    return ended_ && z_.avail_in > 0 ? DecodeResult::kBad : DecodeResult::kOk;
  }
  DecodeResult Finish() override { return ended_ ? DecodeResult::kOk : DecodeResult::kBad; }

 private:
  int64_t max_bytes_;
  z_stream z_{};
  bool ok_ = false;
  bool ended_ = false;
};

class BrotliBodyDecoder final : public BodyDecoder {
 public:
  explicit BrotliBodyDecoder(int64_t max_bytes)
      : max_bytes_(max_bytes), s_(BrotliDecoderCreateInstance(nullptr, nullptr, nullptr)) {}
  ~BrotliBodyDecoder() override {
    if (s_ != nullptr) BrotliDecoderDestroyInstance(s_);
  }
  DecodeResult Feed(std::string_view piece, std::string& out) override {
    if (s_ == nullptr) return DecodeResult::kBad;
    size_t avail_in = piece.size();
    auto next_in = reinterpret_cast<const uint8_t*>(piece.data());
    for (;;) {
      uint8_t buf[16384];
      size_t avail_out = sizeof(buf);
      uint8_t* next_out = buf;
      const BrotliDecoderResult rc =
          BrotliDecoderDecompressStream(s_, &avail_in, &next_in, &avail_out, &next_out, nullptr);
      const size_t n = sizeof(buf) - avail_out;
      if (static_cast<int64_t>(out.size() + n) > max_bytes_) return DecodeResult::kTooLarge;
      out.append(reinterpret_cast<const char*>(buf), n);
      if (rc == BROTLI_DECODER_RESULT_ERROR) return DecodeResult::kBad;
      if (rc == BROTLI_DECODER_RESULT_SUCCESS) {
        ended_ = true;
        return avail_in > 0 ? DecodeResult::kBad : DecodeResult::kOk;
      }
      if (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) return DecodeResult::kOk;
    }
  }
  DecodeResult Finish() override { return ended_ ? DecodeResult::kOk : DecodeResult::kBad; }

 private:
  int64_t max_bytes_;
  BrotliDecoderState* s_;
  bool ended_ = false;
};

std::string LowerAscii(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

core::StatusOr<std::unique_ptr<BodyDecoder>> BodyDecoder::For(std::string_view coding,
                                                              int64_t max_bytes) {
  const std::string c = LowerAscii(coding);
  if (c.empty() || c == "identity")
    return std::unique_ptr<BodyDecoder>(new IdentityDecoder(max_bytes));
  if (c == "gzip" || c == "x-gzip" || c == "deflate") {
    return std::unique_ptr<BodyDecoder>(new ZlibDecoder(max_bytes));
  }
  if (c == "br") return std::unique_ptr<BodyDecoder>(new BrotliBodyDecoder(max_bytes));
  return core::InvalidArgument("Content-Encoding: must be gzip, deflate, br or none");
}

}  // namespace tessera::serve
