// BadValues: the values the CLI fuzz harness puts into options: numbers that are out of range
// or not numbers (nan, inf, 1e400, 2^63, 2^64, ...), garbage text (empty, unicode, invalid
// UTF-8, newlines, very long strings), awkward input paths (a folder, /dev/null, /dev/zero, a
// symlink loop, a missing file, a 300-character name, a file of the wrong kind) and awkward
// output paths (/dev/full, a folder, a missing folder, an input of the same command, a symlink
// to an input), malformed planner key=value options and lists, and bad values of the
// environment variables tessera reads.
// Every path is inside the harness's work folder or a device under /dev, so no case can touch
// anything else. Deterministic given the Rng. Not thread-safe (one per harness).
#pragma once

#include <string>
#include <vector>

#include "core/rng.h"
#include "sample_files.h"

namespace tessera::fuzz {

struct BadValue {
  std::string text;   // the argument
  std::string label;  // short, printable: "1e400", "<folder>", "long text (5000 chars)"
};

enum class ValueKind {
  kInt,
  kUint,
  kFloat,
  kText,        // a name or a number in text (--load, --res, --planner)
  kInputFile,   // a JSON file (or a preset name) the command reads
  kOutputFile,  // a file the command writes
  kOutputDir,   // a folder the command writes files into (tarot scenes --out)
  kKeyValue,    // --option key=value
  kIntList,     // comma-separated integers
  kTextList,    // comma-separated names
  kFlag,        // takes no value
};

class BadValues {
 public:
  explicit BadValues(const SampleFiles& s) : s_(s) {}

  BadValue Number(core::Rng& rng) const;
  BadValue Text(core::Rng& rng) const;
  BadValue InputPath(core::Rng& rng) const;
  // `inputs`: the input paths of the same command (an output on one of them must be refused).
  BadValue OutputPath(core::Rng& rng, const std::vector<std::string>& inputs) const;
  BadValue KeyValue(core::Rng& rng) const;
  BadValue List(core::Rng& rng, bool integers) const;
  // An environment entry tessera reads, made bad: "TESSERA_MAX_INPUT_MB=0",
  // "TESSERA_DATA_DIR=<a file>", "TESSERA_LOG=garbage", ...
  BadValue Environment(core::Rng& rng) const;

  // A bad value for an option of `kind`; now and then one meant for another kind.
  BadValue For(ValueKind kind, core::Rng& rng, const std::vector<std::string>& inputs) const;

 private:
  const SampleFiles& s_;
};

}  // namespace tessera::fuzz
