// JSON helpers over nlohmann::json that turn malformed or out-of-range input into a
// Status naming the field, the value and what is allowed, e.g.
//   `cluster.json: device.memory_bytes: got -1, must be > 0`.
// `path` arguments are the dotted location used in messages ("device", "links.intra").
// Stateless free functions; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace tessera::core {

using Json = nlohmann::json;

// Parses `text`; `source` names it in messages (a file path or "<string>").
StatusOr<Json> ParseJson(const std::string& text, const std::string& source);
// Reads and parses a file. NotFound if it cannot be opened.
StatusOr<Json> ReadJsonFile(const std::string& path);
// Writes `j` pretty-printed to `path` with WriteFileAtomically (core/output_file.h): through
// symlinks and devices, via a unique temporary file and rename otherwise, so an interrupted
// write never leaves a file that looks complete and no other file is touched.
Status WriteJsonFile(const std::string& path, const Json& j);

// Required object member `key` of `obj` (which must be an object).
StatusOr<const Json*> Member(const Json& obj, const std::string& path, const std::string& key);

// Typed getters for a required member. Each checks type and range.
StatusOr<double> GetPositiveDouble(const Json& obj, const std::string& path,
                                   const std::string& key);
StatusOr<double> GetNonNegativeDouble(const Json& obj, const std::string& path,
                                      const std::string& key);
// A double in (0, 1].
StatusOr<double> GetFraction(const Json& obj, const std::string& path, const std::string& key);
StatusOr<int64_t> GetPositiveInt(const Json& obj, const std::string& path, const std::string& key);
StatusOr<int64_t> GetNonNegativeInt(const Json& obj, const std::string& path,
                                    const std::string& key);
StatusOr<std::string> GetString(const Json& obj, const std::string& path, const std::string& key);

// "path.key" or "key" when path is empty.
std::string JoinPath(const std::string& path, const std::string& key);

}  // namespace tessera::core
