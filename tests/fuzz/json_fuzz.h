// JSON mutation fuzz: a case takes one sample JSON input of one kind (cluster, device, model,
// batch, plan, profile), mutates it (json_mutator.h) into a file of its own under mut/ (or, for
// a cluster or device preset, into a data folder of its own that $TESSERA_DATA_DIR names), and
// runs a command that loads it: plan / simulate / bench-planner / run for every kind that
// they read, and validate / compare (which relaunch under MPI when valid) for profiles,
// always with --ranks and --hidden values the sample profile was not measured with, so that
// even a profile the mutation left valid is refused before any launch.
// Deterministic given the Rng. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "fuzz_case.h"
#include "sample_files.h"

namespace tessera::fuzz {

struct JsonTarget {
  std::string kind;   // "cluster", "device", ...
  std::string file;   // the pristine sample
  std::string focus;  // JSON pointer most edits go under ("" = anywhere)
  int weight = 1;
  // When set, the mutated file is a data preset: it is written to mut/case-<i>/<preset> and
  // $TESSERA_DATA_DIR names mut/case-<i> (e.g. "hw/devices/a800-sxm4-80gb.json").
  std::string preset;
  std::string group = "zellige";  // the command group the commands belong to
  // Argument lists after the group; "{M}" stands for the mutated file.
  std::vector<std::vector<std::string>> commands;
};

std::vector<JsonTarget> JsonTargets(const SampleFiles& s);

// Writes the mutated file (mut/case-<index>.json, or mut/case-<index>/<preset>) and returns
// the case.
core::StatusOr<FuzzCase> MakeJsonCase(int index, const std::vector<JsonTarget>& targets,
                                      const SampleFiles& s, core::Rng& rng);

}  // namespace tessera::fuzz
