// The options several `tessera compass` subcommands share, each declared here once so that
// its name, help text and check are the same everywhere.
#pragma once

#include <string>

#include "cli/command.h"
#include "cli/options.h"

namespace tessera::cli {

// --topology: a preset name or a topology JSON file (recorded as an input file).
void AddTopologyOption(CLI::App* c, std::string* topology, CommandPaths* paths);

// --time-scale (emulated seconds per device second; unset: measured) and --op-timeout (seconds
// before a stuck op aborts an MPI job), for the subcommands that run on emulated links.
void AddEmulatorOptions(CLI::App* c, double* time_scale, double* op_timeout_s);

}  // namespace tessera::cli
