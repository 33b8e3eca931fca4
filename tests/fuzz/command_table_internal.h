// The pieces command_table.cc's table is built from, shared with command_table_later.cc (the
// table of the later systems' subcommands: kernelflume, elaswave, tarot), so that neither file
// grows past a reviewable size.
#pragma once

#include <string>
#include <vector>

#include "command_table.h"

namespace tessera::fuzz::table_internal {

using K = ValueKind;

inline SubcommandSpec Spec(std::string name, MpiUse mpi, int weight,
                           std::vector<OptionSpec> options) {
  SubcommandSpec s;
  s.name = std::move(name);
  s.mpi = mpi;
  s.weight = weight;
  s.options = std::move(options);
  return s;
}

inline void Append(std::vector<OptionSpec>* to, const std::vector<OptionSpec>& from) {
  to->insert(to->end(), from.begin(), from.end());
}

// Appends the later systems' subcommands (kernelflume, elaswave, tarot); `out` is the output
// folder with a trailing slash.
void AppendLaterSystems(const SampleFiles& s, const std::string& out,
                        std::vector<SubcommandSpec>* t_out);

}  // namespace tessera::fuzz::table_internal
