#include "json_mutator.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

namespace tessera::fuzz {
namespace {

using Json = nlohmann::ordered_json;
using Pointer = nlohmann::ordered_json::json_pointer;

struct Node {
  Pointer ptr;
  int depth;
};

void Collect(const Json& j, const Pointer& at, int depth, std::vector<Node>* out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      Pointer p = at / it.key();
      out->push_back({p, depth + 1});
      Collect(it.value(), p, depth + 1, out);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      Pointer p = at / i;
      out->push_back({p, depth + 1});
      Collect(j[i], p, depth + 1, out);
    }
  }
}

template <class T>
const T& Pick(const std::vector<T>& v, core::Rng& rng) {
  return v[rng.Below(v.size())];
}

// Text written verbatim in place of a placeholder string after dumping.
class RawTexts {
 public:
  // A string value to store in the tree; dumped, it becomes `raw`.
  std::string Add(const std::string& raw) { return Register("", raw); }
  // A key to store in an object with a null value; dumped, the pair becomes `raw`.
  std::string AddPair(const std::string& raw) { return Register(": null", raw); }
  std::string Apply(std::string text) const {
    for (const auto& [key, r] : raws_) {
      const std::string quoted = "\"" + key + "\"" + r.first;
      size_t at = text.find(quoted);
      if (at != std::string::npos) text.replace(at, quoted.size(), r.second);
    }
    return text;
  }

 private:
  std::string Register(const std::string& suffix, const std::string& raw) {
    std::string key = "@@RAW" + std::to_string(raws_.size()) + "@@";
    raws_[key] = {suffix, raw};
    return key;
  }
  std::map<std::string, std::pair<std::string, std::string>> raws_;
};

const std::vector<std::string>& OutOfRange() {
  static const std::vector<std::string> v = {"1e400",
                                             "-1e400",
                                             "-1",
                                             "0",
                                             "-0",
                                             "1e-300",
                                             "4.6e18",
                                             "9223372036854775807",
                                             "9223372036854775808",
                                             "-9223372036854775809",
                                             "18446744073709551616",
                                             "1.5",
                                             "0.1",
                                             "2147483648",
                                             "4294967296",
                                             "1e308",
                                             "-1e308",
                                             "123456789012345678901234567890",
                                             "-0.0",
                                             "5e-324"};
  return v;
}

std::string Nested(size_t depth, bool closed) {
  std::string s(depth, '[');
  if (closed) s += std::string(depth, ']');
  return s;
}

// Picks a node under `focus`: half the time among the shallow ones (depth <= focus + 2).
// `want` filters by type when some node matches (e.g. numbers for out-of-range edits).
const Node* PickNode(const std::vector<Node>& nodes, const Json& doc, int focus_depth,
                     core::Rng& rng, bool (*want)(const Json&)) {
  std::vector<const Node*> pool, shallow;
  for (const Node& n : nodes) {
    if (want != nullptr && !want(doc.at(n.ptr))) continue;
    pool.push_back(&n);
    if (n.depth <= focus_depth + 2) shallow.push_back(&n);
  }
  if (pool.empty()) return nodes.empty() ? nullptr : &nodes[rng.Below(nodes.size())];
  if (!shallow.empty() && rng.Below(2) == 0) return Pick(shallow, rng);
  return Pick(pool, rng);
}

// One edit of the parsed tree; returns its description ("" when nothing could be edited).
std::string EditTree(Json& doc, const Pointer& focus, core::Rng& rng, RawTexts& raw) {
  Json& top = doc.at(focus);
  std::vector<Node> nodes;
  const std::string focus_text = focus.to_string();
  const int focus_depth = static_cast<int>(std::count(focus_text.begin(), focus_text.end(), '/'));
  Collect(top, focus, focus_depth, &nodes);
  if (nodes.empty()) return "";
  const int op = static_cast<int>(rng.Below(9));
  auto is_number = [](const Json& j) { return j.is_number(); };
  auto is_string = [](const Json& j) { return j.is_string(); };
  auto is_array = [](const Json& j) { return j.is_array(); };
  const Node* n = PickNode(nodes, doc, focus_depth, rng,
                           op == 3   ? +is_number
                           : op == 4 ? +is_string
                           : op == 5 ? +is_array
                                     : nullptr);
  const std::string where = n->ptr.to_string();
  Json& node = doc.at(n->ptr);
  Json& parent = doc.at(n->ptr.parent_pointer());
  switch (op) {
    case 0: {  // delete
      if (parent.is_object()) {
        parent.erase(n->ptr.back());
      } else {
        parent.erase(static_cast<size_t>(std::stoul(n->ptr.back())));
      }
      return "deleted " + where;
    }
    case 1: {  // duplicate key
      if (!parent.is_object()) break;
      const std::string key = n->ptr.back();
      std::string dup_value;
      if (rng.Below(2) == 0) {
        dup_value = node.dump();
      } else {
        dup_value = Pick(OutOfRange(), rng);
      }
      parent[raw.AddPair(Json(key).dump() + ": " + dup_value)] = nullptr;
      return "duplicated key " + where + " (second value " + dup_value.substr(0, 40) + ")";
    }
    case 2: {  // change type
      static const std::vector<Json> values = {"x",
                                               1,
                                               -1,
                                               true,
                                               false,
                                               nullptr,
                                               Json::array(),
                                               Json::object(),
                                               Json::array({1, 2}),
                                               Json{{"a", 1}},
                                               0.5,
                                               ""};
      Json v = Pick(values, rng);
      for (int i = 0; i < 4 && v.type() == node.type(); ++i) v = Pick(values, rng);
      node = v;
      return "set " + where + " = " + v.dump();
    }
    case 3: {  // out-of-range number
      const std::string& v = Pick(OutOfRange(), rng);
      node = raw.Add(v);
      return "set " + where + " = " + v;
    }
    case 4: {  // awkward string
      static const std::vector<std::string> strings = {"",
                                                       " ",
                                                       "ünïcödé",
                                                       "a\nb",
                                                       "line1\nline2\n",
                                                       "🙂",
                                                       std::string("nul\0x", 5),
                                                       "\x1b[31m",
                                                       "a800x16",
                                                       "v50",
                                                       "joint"};
      if (rng.Below(6) == 0) {
        node = std::string(rng.Below(2) == 0 ? 5000 : 100000, 'x');
        return "set " + where + " = a long string";
      }
      node = Pick(strings, rng);
      return "set " + where + " = " + node.dump();
    }
    case 5: {  // arrays
      if (!node.is_array()) break;
      switch (rng.Below(4)) {
        case 0:
          node = Json::array();
          return "emptied " + where;
        case 1:
          if (node.empty()) break;
          node.push_back(node[rng.Below(node.size())]);
          return "duplicated an element of " + where;
        case 2: {
          if (node.empty()) break;
          const Json e = node[rng.Below(node.size())];
          const size_t copies = rng.Below(2) == 0 ? 1000 : 20000;
          for (size_t i = 0; i < copies; ++i) node.push_back(e);
          return "appended " + std::to_string(copies) + " copies of an element to " + where;
        }
        default:
          if (node.empty()) break;
          node.erase(rng.Below(node.size()));
          return "removed an element of " + where;
      }
      break;
    }
    case 6: {  // deep nesting
      const size_t depth = rng.Below(2) == 0 ? 5000 : 200000;
      node = raw.Add(Nested(depth, true));
      return "set " + where + " = arrays nested " + std::to_string(depth) + " deep";
    }
    case 7:
      node = nullptr;
      return "set " + where + " = null";
    default: {  // a new unknown key next to it
      if (!parent.is_object()) break;
      parent["unknown_key"] = 1;
      return "added unknown key next to " + where;
    }
  }
  node = nullptr;
  return "set " + where + " = null";
}

JsonMutation EditText(const std::string& text, core::Rng& rng) {
  switch (rng.Below(11)) {
    case 0:
    case 1: {
      const size_t at = text.empty() ? 0 : rng.Below(text.size());
      return {text.substr(0, at), "truncated to " + std::to_string(at) + " of " +
                                      std::to_string(text.size()) + " bytes"};
    }
    case 2:
      return {"", "empty file"};
    case 3: {
      std::string bytes(1 + rng.Below(4096), '\0');
      for (char& b : bytes) b = static_cast<char>(rng.Below(256));
      return {bytes, "random bytes (" + std::to_string(bytes.size()) + ")"};
    }
    case 4: {
      static const std::vector<std::string> tops = {"[]",   "null", "42", "\"cluster\"",
                                                    "[{}]", "true", "{}", "-1e400"};
      const std::string& t = Pick(tops, rng);
      return {t + "\n", "whole file = " + t};
    }
    case 5: {
      static const std::vector<std::string> tails = {" x", "}", "]", ",", "\n{}", "\0"};
      const std::string& t = Pick(tails, rng);
      return {text + t, "trailing garbage"};
    }
    case 6:
      return {text + text, "two documents"};
    case 7:
      return {"\xEF\xBB\xBF" + text, "byte-order mark"};
    case 8: {
      const size_t depth = rng.Below(2) == 0 ? 100000 : 1000000;
      const bool closed = rng.Below(2) == 0;
      return {Nested(depth, closed), std::string("arrays nested ") + std::to_string(depth) +
                                         " deep" + (closed ? "" : ", unclosed")};
    }
    case 9: {
      std::string t = text;
      t.insert(text.empty() ? 0 : rng.Below(text.size()), 1, '\0');
      return {t, "a NUL byte inserted"};
    }
    default:
      return {"// a comment\n" + text, "a comment line"};
  }
}

}  // namespace

JsonMutation MutateJson(const std::string& text, const std::string& focus, core::Rng& rng) {
  if (rng.Below(5) == 0) return EditText(text, rng);
  Json doc = Json::parse(text);
  Pointer focus_ptr(focus);
  if (!doc.contains(focus_ptr)) focus_ptr = Pointer();
  RawTexts raw;
  std::string description;
  const int edits = 1 + static_cast<int>(rng.Below(3));
  for (int i = 0; i < edits; ++i) {
    if (!doc.contains(focus_ptr)) break;
    const std::string d = EditTree(doc, focus_ptr, rng, raw);
    if (d.empty()) continue;
    description += (description.empty() ? "" : "; ") + d;
  }
  return {raw.Apply(doc.dump(1)) + "\n", description.empty() ? "unchanged" : description};
}

}  // namespace tessera::fuzz
