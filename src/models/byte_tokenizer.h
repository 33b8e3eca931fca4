// ByteTokenizer: the tokenizer of the tiny Llama presets (vocab 259): ids 0..255 are the bytes
// of the UTF-8 text, 256 is BOS, 257 EOS, 258 PAD. Encode never fails; Decode drops BOS, EOS and
// PAD and keeps every byte as it is (invalid UTF-8 stays as raw bytes; a caller that emits JSON
// must escape or replace them).
// ParseTokenIds reads a prompt given as token ids ("1, 2 3"), so any model can be prompted
// without its tokenizer.
// Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::models {

class ByteTokenizer {
 public:
  static constexpr int32_t kBos = 256;
  static constexpr int32_t kEos = 257;
  static constexpr int32_t kPad = 258;
  static constexpr int64_t kVocab = 259;

  // [BOS, bytes of text...].
  static std::vector<int32_t> Encode(std::string_view text);
  // The bytes of ids in 0..255, in order; BOS, EOS and PAD dropped. An id outside [0, 259) is a
  // programming error (CHECK): callers pass model outputs, which are in the vocabulary.
  static std::string Decode(std::span<const int32_t> ids);
};

// Whitespace- and/or comma-separated decimal ids, each in [0, vocab). InvalidArgument naming the
// position (1-based) and the value: "token ids: #3: got '300', must be in [0, 259)"; empty text
// is InvalidArgument too.
core::StatusOr<std::vector<int32_t>> ParseTokenIds(std::string_view text, int64_t vocab);

}  // namespace tessera::models
