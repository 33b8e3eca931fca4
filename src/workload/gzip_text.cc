#include "workload/gzip_text.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <climits>

namespace tessera::workload {
namespace {

// zlib counts in uInt: feed at most this many bytes per call.
constexpr size_t kChunkBytes = size_t{1} << 20;

std::string ZlibWhy(const z_stream& z, int rc) {
  return z.msg != nullptr ? std::string(z.msg) : fmt::format("zlib error {}", rc);
}

}  // namespace

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

core::StatusOr<std::string> Gunzip(std::string_view bytes, const std::string& source,
                                   int64_t max_bytes) {
  z_stream z{};
  // 16 + MAX_WBITS: a gzip header and trailer (with its CRC) around the deflate data.
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return core::Internal("inflateInit2 failed");
  std::string out;
  std::string buf(kChunkBytes, '\0');
  size_t consumed = 0;
  int rc = Z_OK;
  while (true) {
    if (z.avail_in == 0 && consumed < bytes.size()) {
      const size_t n = std::min(kChunkBytes, bytes.size() - consumed);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + consumed));
      z.avail_in = static_cast<uInt>(n);
      consumed += n;
    }
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf.data(), buf.size() - z.avail_out);
    if (static_cast<int64_t>(out.size()) > max_bytes) {
      inflateEnd(&z);
      return core::InvalidArgument(fmt::format(
          "{}: decompresses to more than {} bytes, the input limit", source, max_bytes));
    }
    if (rc == Z_STREAM_END) {
      // Another member may follow (concatenated gzip files); trailing zero padding is ignored.
      const size_t left = z.avail_in + (bytes.size() - consumed);
      if (left == 0) break;
      const std::string_view rest = bytes.substr(bytes.size() - left);
      if (rest.find_first_not_of('\0') == std::string_view::npos) break;
      if (inflateReset(&z) != Z_OK) break;
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && consumed == bytes.size()) {
      inflateEnd(&z);
      return core::InvalidArgument(
          fmt::format("{}: not a valid gzip file (truncated: it ends inside the stream)", source));
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string why = ZlibWhy(z, rc);
      inflateEnd(&z);
      return core::InvalidArgument(fmt::format("{}: not a valid gzip file ({})", source, why));
    }
  }
  inflateEnd(&z);
  return out;
}

core::StatusOr<std::string> Gzip(std::string_view text) {
  z_stream z{};
  // No deflateSetHeader: zlib writes a gzip header with no name and modification time 0.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return core::Internal("deflateInit2 failed");
  }
  std::string out;
  std::string buf(kChunkBytes, '\0');
  size_t consumed = 0;
  int rc = Z_OK;
  do {
    if (z.avail_in == 0 && consumed < text.size()) {
      const size_t n = std::min(kChunkBytes, text.size() - consumed);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data() + consumed));
      z.avail_in = static_cast<uInt>(n);
      consumed += n;
    }
    const int flush = consumed == text.size() ? Z_FINISH : Z_NO_FLUSH;
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = static_cast<uInt>(buf.size());
    rc = deflate(&z, flush);
    if (rc == Z_STREAM_ERROR) {
      deflateEnd(&z);
      return core::Internal("deflate failed");
    }
    out.append(buf.data(), buf.size() - z.avail_out);
  } while (rc != Z_STREAM_END);
  deflateEnd(&z);
  return out;
}

}  // namespace tessera::workload
