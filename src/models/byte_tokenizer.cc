#include "models/byte_tokenizer.h"

#include <fmt/format.h>

#include "core/json_util.h"
#include "core/parse_number.h"

namespace tessera::models {

std::vector<int32_t> ByteTokenizer::Encode(std::string_view text) {
  std::vector<int32_t> ids;
  ids.reserve(text.size() + 1);
  ids.push_back(kBos);
  for (char c : text) ids.push_back(static_cast<int32_t>(static_cast<uint8_t>(c)));
  return ids;
}

std::string ByteTokenizer::Decode(std::span<const int32_t> ids) {
  std::string out;
  out.reserve(ids.size());
  for (int32_t id : ids) {
    CHECK(id >= 0 && id < kVocab) << "ByteTokenizer::Decode: id " << id;
    if (id < 256) out.push_back(static_cast<char>(static_cast<uint8_t>(id)));
  }
  return out;
}

core::StatusOr<std::vector<int32_t>> ParseTokenIds(std::string_view text, int64_t vocab) {
  std::vector<int32_t> ids;
  size_t i = 0;
  auto is_sep = [](char c) {
    return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (i < text.size()) {
    while (i < text.size() && is_sep(text[i])) ++i;
    if (i == text.size()) break;
    size_t j = i;
    while (j < text.size() && !is_sep(text[j])) ++j;
    const std::string word(text.substr(i, j - i));
    auto v = core::ParseInteger(word, 0, vocab - 1);
    if (!v.ok()) {
      return core::InvalidArgument(fmt::format("token ids: #{}: got '{}', must be in [0, {})",
                                               ids.size() + 1, core::Utf8Prefix(word, 40), vocab));
    }
    ids.push_back(static_cast<int32_t>(*v));
    i = j;
  }
  if (ids.empty()) {
    return core::InvalidArgument("token ids: got no ids, must hold at least one (e.g. '1 2 3')");
  }
  return ids;
}

}  // namespace tessera::models
