#include "core/json_util.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <vector>

#include "core/input_file.h"
#include "core/output_file.h"
#include "core/parse_number.h"

namespace tessera::core {

Status CheckKnownKeys(const Json& obj, const std::string& path,
                      std::initializer_list<const char*> allowed) {
  // A top-level object (path "") is named by the caller's prefix alone.
  const std::string where = path.empty() ? "" : path + ": ";
  if (!obj.is_object()) {
    return InvalidArgument(where + "got " + ShowJson(obj) + ", must be an object");
  }
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      const std::string key = it.key().size() > 60 ? Utf8Prefix(it.key(), 60) + "..." : it.key();
      return InvalidArgument(where + "unknown key '" + key + "', must be one of " + list);
    }
  }
  return Status::Ok();
}

std::string ShowJson(const Json& v) {
  constexpr size_t kMaxShown = 60;
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kMaxShown) text = Utf8Prefix(text, kMaxShown) + "...";
  return text;
}

std::string Utf8Prefix(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t n = max_bytes;
  // Back off continuation bytes (10xxxxxx) and the lead byte of the character they belong to.
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n);
}

namespace {

// Bytes of the well-formed UTF-8 character at the start of `b`, or 0 if it is ill-formed
// (Unicode Table 3-7).
size_t Utf8CharBytes(std::string_view b) {
  const auto at = [&](size_t i) { return static_cast<unsigned char>(b[i]); };
  const unsigned char c = at(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlongs
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // <= U+10FFFF
  } else {
    return 0;
  }
  if (b.size() < n || at(1) < lo || at(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if ((at(i) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

std::string Utf8Escaped(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  while (!bytes.empty()) {
    const size_t n = Utf8CharBytes(bytes);
    if (n == 0) {
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(bytes[0]));
      bytes.remove_prefix(1);
    } else {
      out.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
    }
  }
  return out;
}

std::string JoinPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

namespace {

// Nesting deeper than this is refused (nlohmann's destructor and dump recurse).
constexpr int kMaxDepth = 256;

// Parser-callback state: the open objects and arrays, to reject duplicate keys and name
// where they are.
class KeyChecker {
 public:
  // Returns false to drop the element (only once an error was recorded).
  bool operator()(int /*depth*/, Json::parse_event_t event, Json& parsed) {
    if (!error_.empty()) return false;
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (frames_.size() >= kMaxDepth) {
          error_ = "nested deeper than " + std::to_string(kMaxDepth) + " levels at " + Where();
          return false;
        }
        frames_.push_back({event == Json::parse_event_t::object_start, {}, {}, 0});
        return true;
      case Json::parse_event_t::key: {
        Frame& top = frames_.back();
        const std::string key = parsed.get<std::string>();
        if (!top.keys.insert(key).second) {
          top.key = key;
          error_ = Where() + ": duplicate key (each key may appear once in an object)";
          return false;
        }
        top.key = key;
        return true;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        ElementDone();
        return true;
      case Json::parse_event_t::value:
        ElementDone();
        return true;
    }
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;  // objects: the current key
    size_t index;     // arrays: the current element
  };
  void ElementDone() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }
  std::string Where() const {
    std::string path;
    for (const Frame& f : frames_) {
      if (f.object) {
        if (!f.key.empty()) path = JoinPath(path, f.key);
      } else {
        path.append(1, '[').append(std::to_string(f.index)).append(1, ']');
      }
    }
    return path.empty() ? "document" : path;
  }
  std::vector<Frame> frames_;
  std::string error_;
};

// The message for a document nlohmann rejected: where and why.
std::string ParseFailure(const std::string& text) {
  try {
    Json probe = Json::parse(text);
    (void)probe;
  } catch (const Json::parse_error& e) {
    std::string why = "expected a complete JSON document";
    const std::string what = e.what();
    if (auto p = what.find("syntax error while parsing value - "); p != std::string::npos) {
      why = what.substr(p + 35);
    }
    return "malformed JSON (byte " + std::to_string(e.byte) + "): " + why;
  } catch (const Json::out_of_range& e) {
    const std::string what = e.what();
    auto p = what.find("number overflow parsing ");
    if (p != std::string::npos) {
      return "number out of range: " + what.substr(p + 24) + " (JSON numbers must fit a double)";
    }
    return std::string("value out of range: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("malformed JSON: ") + e.what();
  }
  return "malformed JSON";
}

}  // namespace

StatusOr<Json> ParseJson(const std::string& text, const std::string& source) {
  KeyChecker checker;
  Json j;
  try {
    j = Json::parse(text, std::ref(checker), /*allow_exceptions=*/false);
  } catch (const std::bad_alloc&) {
    return InvalidArgument(source + ": out of memory while parsing " + std::to_string(text.size()) +
                           " bytes of JSON");
  } catch (const std::exception& e) {
    return InvalidArgument(source + ": malformed JSON: " + e.what());
  }
  if (!checker.error().empty()) return InvalidArgument(source + ": " + checker.error());
  if (j.is_discarded()) return InvalidArgument(source + ": " + ParseFailure(text));
  return j;
}

StatusOr<Json> ReadJsonFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadInputFile(path));
  return ParseJson(text, path);
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
    return InvalidArgument(JoinPath(path, key) + ": got " + ShowJson(*v) + ", must be a number");
  }
  double d = v->get<double>();
  if (!std::isfinite(d)) return InvalidArgument(JoinPath(path, key) + ": must be finite");
  return d;
}

StatusOr<int64_t> GetInt(const Json& obj, const std::string& path, const std::string& key) {
  ASSIGN_OR_RETURN(const Json* v, Member(obj, path, key));
  if (!v->is_number_integer()) {
    return InvalidArgument(JoinPath(path, key) + ": got " + ShowJson(*v) + ", must be an integer");
  }
  if (v->is_number_unsigned() &&
      v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return InvalidArgument(JoinPath(path, key) + ": got " + ShowJson(*v) +
                           ", must be <= " + std::to_string(std::numeric_limits<int64_t>::max()));
  }
  return v->get<int64_t>();
}

}  // namespace

StatusOr<double> GetPositiveDouble(const Json& obj, const std::string& path,
                                   const std::string& key) {
  ASSIGN_OR_RETURN(double d, GetNumber(obj, path, key));
  if (d <= 0)
    return InvalidArgument(JoinPath(path, key) + ": got " + ShowNumber(d) + ", must be > 0");
  return d;
}

StatusOr<double> GetNonNegativeDouble(const Json& obj, const std::string& path,
                                      const std::string& key) {
  ASSIGN_OR_RETURN(double d, GetNumber(obj, path, key));
  if (d < 0)
    return InvalidArgument(JoinPath(path, key) + ": got " + ShowNumber(d) + ", must be >= 0");
  return d;
}

StatusOr<double> GetFraction(const Json& obj, const std::string& path, const std::string& key) {
  ASSIGN_OR_RETURN(double d, GetNumber(obj, path, key));
  if (d <= 0 || d > 1) {
    return InvalidArgument(JoinPath(path, key) + ": got " + ShowNumber(d) + ", must be in (0, 1]");
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

StatusOr<int64_t> GetIntInRange(const Json& obj, const std::string& path, const std::string& key,
                                int64_t lo, int64_t hi) {
  ASSIGN_OR_RETURN(int64_t v, GetInt(obj, path, key));
  if (v < lo || v > hi) {
    return InvalidArgument(JoinPath(path, key) + ": got " + std::to_string(v) + ", must be in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

StatusOr<double> GetDoubleInRange(const Json& obj, const std::string& path, const std::string& key,
                                  double lo, double hi) {
  ASSIGN_OR_RETURN(double d, GetNumber(obj, path, key));
  if (d < lo || d > hi) {
    return InvalidArgument(JoinPath(path, key) + ": got " + ShowNumber(d) + ", must be in [" +
                           ShowNumber(lo) + ", " + ShowNumber(hi) + "]");
  }
  return d;
}

StatusOr<std::string> GetString(const Json& obj, const std::string& path, const std::string& key) {
  ASSIGN_OR_RETURN(const Json* v, Member(obj, path, key));
  if (!v->is_string()) {
    return InvalidArgument(JoinPath(path, key) + ": got " + ShowJson(*v) + ", must be a string");
  }
  return v->get<std::string>();
}

Status CheckKindAndVersion(const Json& obj, const std::string& path, const std::string& kind,
                           int64_t version) {
  ASSIGN_OR_RETURN(std::string got, GetString(obj, path, "kind"));
  if (got != kind) {
    return InvalidArgument(path + ": kind: got '" + got + "', must be " + kind);
  }
  ASSIGN_OR_RETURN(int64_t v, GetIntInRange(obj, path, "version", 1, 1000000));
  if (v != version) {
    return InvalidArgument(path + ": version: got " + std::to_string(v) +
                           ", this tessera reads version " + std::to_string(version));
  }
  return Status::Ok();
}

}  // namespace tessera::core
