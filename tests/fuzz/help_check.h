// CheckTableAgainstHelp: keeps the CLI fuzz harness's command table (command_table.h) in step
// with the binary. For every command group in the table (zellige, compass, xema) it reads
// `tessera <group> --help` and `tessera <group> <cmd> --help` and fails, naming what differs,
// when the binary has a subcommand or an option the table lacks or the other way round, so a
// new option is fuzzed from the day it appears. (A group the table does not name at all is not
// checked: add its first subcommand to the table.)
// Not thread-safe (runs child processes).
#pragma once

#include <string>
#include <vector>

#include "command_table.h"
#include "core/status.h"

namespace tessera::fuzz {

core::Status CheckTableAgainstHelp(const std::string& bin, const std::vector<SubcommandSpec>& table,
                                   const std::string& cwd);

// The names listed in a CLI11 help text: options ("--name", from the "Options:" section,
// -h/--help left out) or, with subcommands = true, the "Subcommands:" section's names.
std::vector<std::string> NamesInHelp(const std::string& help, bool subcommands);

}  // namespace tessera::fuzz
