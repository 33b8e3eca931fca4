// JSON helpers over nlohmann::json that turn malformed or out-of-range input into a
// Status naming the field, the value and what is allowed, e.g.
//   `cluster.json: device.memory_bytes: got -1, must be > 0`.
// `path` arguments are the dotted location used in messages ("device", "links.intra").
// Stateless free functions; thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::core {

using Json = nlohmann::json;

// Parses `text`; `source` names it in messages (a file path or "<string>"). Never throws:
// malformed text (with the byte and what was expected), a number that does not fit a double
// (1e400), a key that appears twice in one object (named by its dotted path, e.g.
// `links.intra: duplicate key`) and nesting deeper than 256 levels are InvalidArgument.
StatusOr<Json> ParseJson(const std::string& text, const std::string& source);
// Reads (core/input_file.h: size limit, directories, devices and empty files named) and
// parses a file.
StatusOr<Json> ReadJsonFile(const std::string& path);
// Writes `j` pretty-printed to `path` with WriteFileAtomically (core/output_file.h): through
// symlinks and devices, via a unique temporary file and rename otherwise, so an interrupted
// write never leaves a file that looks complete and no other file is touched.
Status WriteJsonFile(const std::string& path, const Json& j);

// Required object member `key` of `obj` (which must be an object).
StatusOr<const Json*> Member(const Json& obj, const std::string& path, const std::string& key);

// Typed getters for a required member. Each checks type and range; integers above
// INT64_MAX are refused, never wrapped.
StatusOr<double> GetPositiveDouble(const Json& obj, const std::string& path,
                                   const std::string& key);
StatusOr<double> GetNonNegativeDouble(const Json& obj, const std::string& path,
                                      const std::string& key);
// A double in (0, 1].
StatusOr<double> GetFraction(const Json& obj, const std::string& path, const std::string& key);
StatusOr<int64_t> GetPositiveInt(const Json& obj, const std::string& path, const std::string& key);
StatusOr<int64_t> GetNonNegativeInt(const Json& obj, const std::string& path,
                                    const std::string& key);
// An integer in [lo, hi] (the range check comes before any narrowing by the caller).
StatusOr<int64_t> GetIntInRange(const Json& obj, const std::string& path, const std::string& key,
                                int64_t lo, int64_t hi);
// A finite double in [lo, hi].
StatusOr<double> GetDoubleInRange(const Json& obj, const std::string& path, const std::string& key,
                                  double lo, double hi);
StatusOr<std::string> GetString(const Json& obj, const std::string& path, const std::string& key);

// The file-kind header of a tessera JSON file: `kind` must equal `kind` and `version` must
// be `version`: "p.json: kind: got 'compass-grid', must be compass-profile", "p.json: version:
// got 2, this tessera reads version 1".
Status CheckKindAndVersion(const Json& obj, const std::string& path, const std::string& kind,
                           int64_t version);

// OK when `obj` is an object whose keys are all in `allowed`; else InvalidArgument
// "path: unknown key 'x', must be one of a, b, c" (a typo must not be silently ignored) or
// "path: got ..., must be an object".
Status CheckKnownKeys(const Json& obj, const std::string& path,
                      std::initializer_list<const char*> allowed);
// `v` as compact JSON for a message, cut to 60 bytes with "..." (a value given as a
// 20,000-element array must not become a megabyte-long error line); never inside a UTF-8
// character.
std::string ShowJson(const Json& v);

// The longest prefix of `text` of at most `max_bytes` bytes that does not end inside a UTF-8
// character (a message cut there stays valid UTF-8, so it can go into JSON).
std::string Utf8Prefix(const std::string& text, size_t max_bytes);

// `bytes` as valid UTF-8: well-formed characters kept, each byte of an ill-formed sequence
// (stray continuation, truncated, overlong, surrogate, above U+10FFFF) written as the four
// characters \xNN -- for showing model output or file bytes in a terminal or in JSON.
std::string Utf8Escaped(std::string_view bytes);

// "path.key" or "key" when path is empty.
std::string JoinPath(const std::string& path, const std::string& key);

}  // namespace tessera::core
