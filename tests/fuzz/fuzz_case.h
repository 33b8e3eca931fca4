// FuzzCase: one generated command line for the CLI fuzz harness, with what the harness must
// know to judge it: which paths it was told to write (outputs it may create or replace, which
// the harness removes afterwards, and folders it may fill), which values it was given to read,
// which files the harness wrote for it (a mutated JSON input), extra environment entries, and a
// description of what was made bad. A plain value type.
#pragma once

#include <string>
#include <vector>

namespace tessera::fuzz {

enum class Family { kOption, kJson };

inline const char* FamilyName(Family f) { return f == Family::kOption ? "option" : "json"; }

struct FuzzCase {
  int index = 0;
  Family family = Family::kOption;
  std::string subcommand;                // "plan", "run", ...
  std::vector<std::string> args;         // after the binary: "zellige", subcommand, options...
  std::vector<std::string> env;          // extra environment entries "NAME=value"
  std::vector<std::string> outputs;      // paths the case's output options name
  std::vector<std::string> output_dirs;  // folders it may create and write files into
  std::vector<std::string> inputs;       // values of its other options (paths or not)
  std::vector<std::string> case_files;   // absolute paths of files written for this case only
  std::string what;       // e.g. "--seconds=1e400 --fps=<folder>" or "plan: truncated at 812"
  std::string signature;  // grouping key, e.g. "plan --option" or "json plan -> simulate"
};

}  // namespace tessera::fuzz
