// MutateJson: makes a JSON document bad in the ways a hand-edited or damaged config file is
// bad. On the parsed tree (one to three edits at nodes under `focus`, a JSON pointer, with
// half the picks among the shallow nodes): delete a key, write a key twice (textually, as a
// parser sees a duplicate), change a value's type, put an out-of-range number (1e400, -1, 0,
// 1e-300, 4.6e18, 2^63, 2^64, ... written verbatim), an awkward string (empty, unicode,
// newline, very long), empty or grow an array, nest arrays thousands deep. On the text:
// truncate it, empty it, replace it with random bytes, a non-object top level, trailing
// garbage, a byte-order mark, deep nesting.
// Deterministic given the Rng. Not thread-safe.
#pragma once

#include <string>

#include "core/rng.h"

namespace tessera::fuzz {

struct JsonMutation {
  std::string text;         // the mutated file contents
  std::string description;  // e.g. "set /placements/3/tokens = 1e400; deleted /num_ranks"
};

// `text` must be valid JSON (the harness's own sample files).
JsonMutation MutateJson(const std::string& text, const std::string& focus, core::Rng& rng);

}  // namespace tessera::fuzz
