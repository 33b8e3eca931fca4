#include "workload/request_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "core/input_file.h"
#include "core/json_util.h"
#include "core/output_file.h"
#include "workload/gzip_text.h"

namespace tessera::workload {
namespace {

using core::InvalidArgument;
using core::Json;
using core::Status;

constexpr std::array<const char*, 4> kFields = {"timestamp", "input_length", "output_length",
                                                "hash_ids"};
constexpr const char* kLineShape =
    "each line is {\"timestamp\": ms, \"input_length\": tokens, \"output_length\": tokens, "
    "\"hash_ids\": [ids]}";

// A JSON value as it appears in a message, shortened.
std::string Show(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// The value of an integer JSON number (not a float, not above INT64_MAX).
std::optional<int64_t> AsInt(const Json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

Status CheckLength(int64_t value, const std::string& where, const char* field) {
  if (value < 1 || value > kMaxTraceTokens) {
    return InvalidArgument(fmt::format("{}: {}: got {}, must be an integer in [1, {}] (tokens)",
                                       where, field, value, kMaxTraceTokens));
  }
  return Status::Ok();
}

// The checks on values (types already checked): lengths, timestamp order, hash_ids.
Status CheckRequest(const TraceRequest& r, int64_t previous_ms, const std::string& where,
                    const std::string& previous_name) {
  if (r.timestamp_ms < 0) {
    return InvalidArgument(
        fmt::format("{}: timestamp: got {}, must be an integer >= 0 (ms)", where, r.timestamp_ms));
  }
  if (r.timestamp_ms < previous_ms) {
    return InvalidArgument(fmt::format(
        "{}: timestamp: got {}, must be >= {} (the timestamp of {}; requests are in arrival "
        "order)",
        where, r.timestamp_ms, previous_ms, previous_name));
  }
  RETURN_IF_ERROR(CheckLength(r.input_length, where, "input_length"));
  RETURN_IF_ERROR(CheckLength(r.output_length, where, "output_length"));
  const int64_t blocks = TraceBlocks(r.input_length);
  if (static_cast<int64_t>(r.hash_ids.size()) != blocks) {
    return InvalidArgument(fmt::format(
        "{}: hash_ids: got {} ids, must be ceil(input_length {} / {}) = {} (one id per "
        "{}-token block of the prompt)",
        where, r.hash_ids.size(), r.input_length, kTraceBlockTokens, blocks, kTraceBlockTokens));
  }
  for (size_t i = 0; i < r.hash_ids.size(); ++i) {
    if (r.hash_ids[i] < 0) {
      return InvalidArgument(fmt::format("{}: hash_ids[{}]: got {}, must be an integer >= 0", where,
                                         i, r.hash_ids[i]));
    }
  }
  std::vector<int64_t> sorted = r.hash_ids;
  std::sort(sorted.begin(), sorted.end());
  const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  if (twice != sorted.end()) {
    return InvalidArgument(fmt::format(
        "{}: hash_ids: id {} appears twice, must appear at most once (each id is one block of "
        "this prompt)",
        where, *twice));
  }
  return Status::Ok();
}

// Types and presence of one parsed line; fills *r.
Status FromJson(const Json& j, const std::string& where, const MooncakeReadOptions& options,
                TraceRequest* r) {
  if (!j.is_object()) {
    return InvalidArgument(
        fmt::format("{}: got {}, must be a JSON object ({})", where, Show(j), kLineShape));
  }
  if (!options.lenient) {
    for (const auto& [key, value] : j.items()) {
      if (std::find(kFields.begin(), kFields.end(), key) == kFields.end()) {
        return InvalidArgument(fmt::format(
            "{}: {}: unknown key, must be one of timestamp, input_length, output_length, "
            "hash_ids (the lenient option, --lenient, ignores unknown keys)",
            where, key));
      }
    }
  }
  for (const char* field : kFields) {
    if (!j.contains(field)) {
      return InvalidArgument(fmt::format("{}: {}: missing ({})", where, field, kLineShape));
    }
  }
  const std::optional<int64_t> ts = AsInt(j["timestamp"]);
  if (!ts) {
    return InvalidArgument(fmt::format("{}: timestamp: got {}, must be an integer >= 0 (ms)", where,
                                       Show(j["timestamp"])));
  }
  r->timestamp_ms = *ts;
  for (const char* field : {"input_length", "output_length"}) {
    const std::optional<int64_t> v = AsInt(j[field]);
    if (!v) {
      return InvalidArgument(fmt::format("{}: {}: got {}, must be an integer in [1, {}] (tokens)",
                                         where, field, Show(j[field]), kMaxTraceTokens));
    }
    (std::string_view(field) == "input_length" ? r->input_length : r->output_length) = *v;
  }
  const Json& ids = j["hash_ids"];
  if (!ids.is_array()) {
    return InvalidArgument(fmt::format(
        "{}: hash_ids: got {}, must be an array of integers >= 0 (one per {}-token block)", where,
        Show(ids), kTraceBlockTokens));
  }
  r->hash_ids.clear();
  r->hash_ids.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::optional<int64_t> id = AsInt(ids[i]);
    if (!id) {
      return InvalidArgument(
          fmt::format("{}: hash_ids[{}]: got {}, must be an integer >= 0", where, i, Show(ids[i])));
    }
    r->hash_ids.push_back(*id);
  }
  return Status::Ok();
}

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

int64_t TraceBlocks(int64_t input_length) {
  return input_length <= 0 ? 0 : (input_length + kTraceBlockTokens - 1) / kTraceBlockTokens;
}

core::StatusOr<std::vector<TraceRequest>> ParseMooncakeTrace(std::string_view text,
                                                             const std::string& source,
                                                             const MooncakeReadOptions& options) {
  std::vector<TraceRequest> out;
  int64_t previous_ms = 0;
  int64_t previous_line = 0;
  int64_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (IsBlank(line)) continue;
    const std::string where = fmt::format("{}: line {}", source, line_no);
    ASSIGN_OR_RETURN(Json j, core::ParseJson(std::string(line), where));
    TraceRequest r;
    RETURN_IF_ERROR(FromJson(j, where, options, &r));
    RETURN_IF_ERROR(CheckRequest(r, previous_ms, where, fmt::format("line {}", previous_line)));
    previous_ms = r.timestamp_ms;
    previous_line = line_no;
    out.push_back(std::move(r));
  }
  if (out.empty()) {
    return InvalidArgument(
        fmt::format("{}: holds no request, must hold at least one line ({})", source, kLineShape));
  }
  return out;
}

core::StatusOr<std::vector<TraceRequest>> ReadMooncakeTrace(const std::string& path,
                                                            const MooncakeReadOptions& options) {
  ASSIGN_OR_RETURN(std::string bytes, core::ReadInputFile(path));
  if (IsGzip(bytes)) {
    ASSIGN_OR_RETURN(const int64_t limit, core::MaxInputBytes());
    ASSIGN_OR_RETURN(bytes, Gunzip(bytes, path, limit));
  }
  return ParseMooncakeTrace(bytes, path, options);
}

Status ValidateTrace(const std::vector<TraceRequest>& requests) {
  if (requests.empty()) return InvalidArgument("trace: holds no request, must hold at least one");
  for (size_t i = 0; i < requests.size(); ++i) {
    const int64_t previous_ms = i == 0 ? 0 : requests[i - 1].timestamp_ms;
    RETURN_IF_ERROR(CheckRequest(requests[i], previous_ms, fmt::format("request {}", i),
                                 fmt::format("request {}", i == 0 ? 0 : i - 1)));
  }
  return Status::Ok();
}

std::string FormatMooncakeTrace(const std::vector<TraceRequest>& requests) {
  std::string out;
  for (const TraceRequest& r : requests) {
    fmt::format_to(std::back_inserter(out),
                   "{{\"timestamp\": {}, \"input_length\": {}, \"output_length\": {}, "
                   "\"hash_ids\": [",
                   r.timestamp_ms, r.input_length, r.output_length);
    for (size_t i = 0; i < r.hash_ids.size(); ++i) {
      if (i > 0) out += ", ";
      fmt::format_to(std::back_inserter(out), "{}", r.hash_ids[i]);
    }
    out += "]}\n";
  }
  return out;
}

Status WriteMooncakeTrace(const std::string& path, const std::vector<TraceRequest>& requests) {
  std::string text = FormatMooncakeTrace(requests);
  if (path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    ASSIGN_OR_RETURN(text, Gzip(text));
  }
  return core::WriteFileAtomically(path, text);
}

}  // namespace tessera::workload
