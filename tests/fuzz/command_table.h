// The CLI fuzz harness's table of subcommands (`tessera <group> <cmd>`, groups zellige, compass,
// xema, kernelflume, tarot): every option with the kind of value it takes (as
// `tessera <group> <cmd> --help` lists them),
// quick valid base command lines to start a case from, and how the subcommand uses MPI.
//
// MPI: `run` starts MPI in this process (a 1-rank singleton, about half a second);
// `profile`, `validate`, `compare` and `compass links` re-run themselves under mpiexec once their
// options are valid and then measure for minutes, so their cases must fail before that: each of
// their options lists `parse_time_invalid` values that are refused before any launch (a value that
// is not a number, or a SmallDit / repeats / ranks value the command checks first), and each
// case of theirs carries one (the "anchor").
// Servers: `xema serve` runs until stopped, so its bases listen on a free port for a fraction
// of a second (--duration-s, kept: never dropped or replaced) and exit 0.
// Not thread-safe; built once per harness.
#pragma once

#include <string>
#include <vector>

#include "bad_values.h"
#include "sample_files.h"

namespace tessera::fuzz {

enum class MpiUse { kNone, kSingleton, kRelaunch };

struct OptionSpec {
  std::string name;  // "--cluster"
  ValueKind kind;
  std::vector<std::string> parse_time_invalid;  // kRelaunch only: refused before mpiexec
};

struct SubcommandSpec {
  // The system's command group; words separated by one space name a nested group
  // ("kernelflume bench": `tessera kernelflume bench <name>`).
  std::string group = "zellige";
  std::string name;  // "plan"
  MpiUse mpi = MpiUse::kNone;
  int weight = 1;  // share of the option-fuzz cases
  std::vector<OptionSpec> options;
  std::vector<std::vector<std::string>> bases;  // valid, quick argument lists after the name
  std::vector<std::string> keep;                // options a case never drops or replaces
  std::vector<std::string> never_drop;          // options a case may make bad but not drop
  // A valid run needs a live server the harness does not start (`xema loadgen`): its bases
  // stop at "cannot reach" with exit 1, so BaseCases leaves them out; its cases are fuzzed.
  bool needs_server = false;

  const OptionSpec* Find(const std::string& option) const;
};

std::vector<SubcommandSpec> CommandTable(const SampleFiles& s);

// A group's words, the argv before the subcommand's name ("kernelflume bench" -> two words).
std::vector<std::string> GroupWords(const std::string& group);

// The environment entry that keeps a kRelaunch subcommand from starting mpiexec should a
// case's options be accepted after all (it then fails with one line: cannot start mpiexec).
inline constexpr const char* kNoMpiexecPath = "PATH=/nonexistent-tessera-fuzz-bin";

}  // namespace tessera::fuzz
