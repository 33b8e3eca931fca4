// Request traces in the Mooncake format (kvcache-ai/Mooncake, FAST25-release/traces): one JSON
// object per line, in arrival order,
//   {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}
// timestamp: arrival in milliseconds from the trace's start; input_length / output_length:
// prompt and generated tokens; hash_ids: one id per kTraceBlockTokens-token block of the prompt,
// two requests sharing their leading ids share that prefix (reusable KV). The simulator, the
// replay and the generators (agentic_trace.h) all speak this one format.
//
// Reading (ParseMooncakeTrace over text, ReadMooncakeTrace over a file: plain JSONL, or gzip,
// recognised by its magic bytes, not by the name) checks every line and refuses the first bad
// one with InvalidArgument "SOURCE: line N: FIELD: got X, must be ...":
//  - malformed JSON, or a line that is not an object;
//  - a field missing (timestamp, input_length, output_length, hash_ids);
//  - a key the format does not have (options.lenient ignores unknown keys instead);
//  - timestamp not an integer >= 0, or below the previous line's (decreasing);
//  - input_length or output_length not an integer in [1, kMaxTraceTokens] (negative, zero,
//    fractional, a string);
//  - bad hash_ids: not an array; an element that is not an integer >= 0; an id twice in one
//    line; or a count other than ceil(input_length / 512). We chose the exact count because the
//    ids are per block of the prompt: every line of both released traces (16,024 lines) has
//    exactly that count, no id twice and ids >= 0, so a different count means a trace whose
//    blocks do not describe its prompt and reuse computed from it would be wrong. Ids need not
//    be dense or increasing (other producers may hash differently).
// Blank lines (only spaces) are skipped; they still count in line numbers. A trace with no
// request is InvalidArgument. Files go through core::ReadInputFile (size limit, directories,
// devices); a gzip file's decompressed size is held to the same limit.
//
// Writing (FormatMooncakeTrace, WriteMooncakeTrace) gives exactly the released files' layout
// (keys in the order above, ", " and ": " separators, one "\n" after each line), so reading a
// released file and writing it back gives the same bytes; a path ending in ".gz" is written
// gzip-compressed (deterministic bytes). Writing checks nothing: write what Validate accepts.
// Plain values and free functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::workload {

// Tokens per hash block in the Mooncake format.
inline constexpr int64_t kTraceBlockTokens = 512;
// The largest input_length or output_length a trace may hold (2^30 tokens).
inline constexpr int64_t kMaxTraceTokens = int64_t{1} << 30;

struct TraceRequest {
  int64_t timestamp_ms = 0;
  int64_t input_length = 0;       // prompt tokens
  int64_t output_length = 0;      // generated tokens
  std::vector<int64_t> hash_ids;  // ceil(input_length / kTraceBlockTokens) block ids

  bool operator==(const TraceRequest&) const = default;
};

struct MooncakeReadOptions {
  bool lenient = false;  // ignore keys the format does not have
};

// ceil(input_length / kTraceBlockTokens).
int64_t TraceBlocks(int64_t input_length);

// `source` names the text in messages (a path).
core::StatusOr<std::vector<TraceRequest>> ParseMooncakeTrace(std::string_view text,
                                                             const std::string& source,
                                                             const MooncakeReadOptions& options);
core::StatusOr<std::vector<TraceRequest>> ReadMooncakeTrace(const std::string& path,
                                                            const MooncakeReadOptions& options);

// The same checks over requests built in memory (a generator's output), naming request i
// (0-based) as "request i".
core::Status ValidateTrace(const std::vector<TraceRequest>& requests);

std::string FormatMooncakeTrace(const std::vector<TraceRequest>& requests);
// Atomic (core::WriteFileAtomically); gzip when `path` ends in ".gz".
core::Status WriteMooncakeTrace(const std::string& path, const std::vector<TraceRequest>& requests);

}  // namespace tessera::workload
