#include "core/json_util.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/output_file.h"

namespace tessera::core {

std::string JoinPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

StatusOr<Json> ParseJson(const std::string& text, const std::string& source) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Re-parse with exceptions only to extract the position for the message.
    try {
      Json probe = Json::parse(text);
      (void)probe;
    } catch (const Json::parse_error& e) {
      return InvalidArgument(source + ": malformed JSON (byte " + std::to_string(e.byte) +
                             "): expected a complete JSON document");
    }
    return InvalidArgument(source + ": malformed JSON");
  }
  return j;
}

StatusOr<Json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseJson(ss.str(), path);
}

Status WriteJsonFile(const std::string& path, const Json& j) {
  return WriteFileAtomically(path, j.dump(2) + "\n");
}

StatusOr<const Json*> Member(const Json& obj, const std::string& path, const std::string& key) {
  if (!obj.is_object()) {
    return InvalidArgument((path.empty() ? std::string("document") : path) + ": got " +
                           std::string(obj.type_name()) + ", must be an object");
  }
  auto it = obj.find(key);
  if (it == obj.end()) return InvalidArgument(JoinPath(path, key) + ": missing required field");
  return &*it;
}

namespace {

StatusOr<double> GetNumber(const Json& obj, const std::string& path, const std::string& key) {
  ASSIGN_OR_RETURN(const Json* v, Member(obj, path, key));
  if (!v->is_number()) {
    return InvalidArgument(JoinPath(path, key) + ": got " + v->dump() + ", must be a number");
  }
  double d = v->get<double>();
  if (!std::isfinite(d)) return InvalidArgument(JoinPath(path, key) + ": must be finite");
  return d;
}

std::string Show(double d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

StatusOr<int64_t> GetInt(const Json& obj, const std::string& path, const std::string& key) {
  ASSIGN_OR_RETURN(const Json* v, Member(obj, path, key));
  if (!v->is_number_integer()) {
    return InvalidArgument(JoinPath(path, key) + ": got " + v->dump() + ", must be an integer");
  }
  return v->get<int64_t>();
}

}  // namespace

StatusOr<double> GetPositiveDouble(const Json& obj, const std::string& path,
                                   const std::string& key) {
  ASSIGN_OR_RETURN(double d, GetNumber(obj, path, key));
  if (d <= 0) return InvalidArgument(JoinPath(path, key) + ": got " + Show(d) + ", must be > 0");
  return d;
}

StatusOr<double> GetNonNegativeDouble(const Json& obj, const std::string& path,
                                      const std::string& key) {
  ASSIGN_OR_RETURN(double d, GetNumber(obj, path, key));
  if (d < 0) return InvalidArgument(JoinPath(path, key) + ": got " + Show(d) + ", must be >= 0");
  return d;
}

StatusOr<double> GetFraction(const Json& obj, const std::string& path, const std::string& key) {
  ASSIGN_OR_RETURN(double d, GetNumber(obj, path, key));
  if (d <= 0 || d > 1) {
    return InvalidArgument(JoinPath(path, key) + ": got " + Show(d) + ", must be in (0, 1]");
  }
  return d;
}

StatusOr<int64_t> GetPositiveInt(const Json& obj, const std::string& path, const std::string& key) {
  ASSIGN_OR_RETURN(int64_t v, GetInt(obj, path, key));
  if (v <= 0) {
    return InvalidArgument(JoinPath(path, key) + ": got " + std::to_string(v) + ", must be >= 1");
  }
  return v;
}

StatusOr<int64_t> GetNonNegativeInt(const Json& obj, const std::string& path,
                                    const std::string& key) {
  ASSIGN_OR_RETURN(int64_t v, GetInt(obj, path, key));
  if (v < 0) {
    return InvalidArgument(JoinPath(path, key) + ": got " + std::to_string(v) + ", must be >= 0");
  }
  return v;
}

StatusOr<std::string> GetString(const Json& obj, const std::string& path, const std::string& key) {
  ASSIGN_OR_RETURN(const Json* v, Member(obj, path, key));
  if (!v->is_string()) {
    return InvalidArgument(JoinPath(path, key) + ": got " + v->dump() + ", must be a string");
  }
  return v->get<std::string>();
}

}  // namespace tessera::core
