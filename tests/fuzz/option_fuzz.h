// Option fuzz: a case starts from a valid, quick base command of one subcommand (chosen by
// the table's weights) and makes 1 to 3 of its options bad: an option set to a bad value of
// its kind (bad_values.h), an option dropped, a misspelt option added, two outputs on one
// path, or an output on one of the command's inputs. A subcommand that relaunches under MPI
// also gets an anchor value that is refused before any launch (command_table.h) and the
// environment entry that keeps mpiexec from starting.
// Deterministic given the Rng. Not thread-safe.
#pragma once

#include <vector>

#include "bad_values.h"
#include "command_table.h"
#include "core/rng.h"
#include "fuzz_case.h"

namespace tessera::fuzz {

FuzzCase MakeOptionCase(int index, const std::vector<SubcommandSpec>& table, const BadValues& bad,
                        const SampleFiles& s, core::Rng& rng);

// The base command lines of the table as cases (to check that each is valid and passes).
std::vector<FuzzCase> BaseCases(const std::vector<SubcommandSpec>& table);

}  // namespace tessera::fuzz
