// Gzip in memory, for data files kept compressed in the repository (data/traces/*.jsonl.gz)
// and for outputs a user names `*.gz`.
//
// IsGzip(bytes): whether `bytes` start with the gzip magic (1f 8b).
// Gunzip(bytes, source, max_bytes): the decompressed bytes of one gzip stream or several
//   concatenated ones (what `cat a.gz b.gz` gives). Errors, all InvalidArgument naming
//   `source`: corrupt or truncated data ("SOURCE: not a valid gzip file (...)"), and output
//   larger than `max_bytes` (with the limit), checked while inflating so a small file that
//   expands hugely is refused before it takes the memory.
// Gzip(text): a gzip stream of `text` at zlib's default level (6: on trace text, the size of
//   level 9 in a quarter of the time), with no file name and a zero modification time in its
//   header, so the same text gives the same bytes on every run.
// Stateless free functions over zlib; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::workload {

bool IsGzip(std::string_view bytes);
core::StatusOr<std::string> Gunzip(std::string_view bytes, const std::string& source,
                                   int64_t max_bytes);
core::StatusOr<std::string> Gzip(std::string_view text);

}  // namespace tessera::workload
