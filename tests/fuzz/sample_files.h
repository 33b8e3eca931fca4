// SampleFiles: the inputs the CLI fuzz cases start from, set up in the harness's work folder.
// Copies of the repository's data (a cluster preset, a device preset inlined into a cluster,
// the hand-made 2-rank profile, the plan files `tessera zellige run` tests use) and files
// tessera itself writes (`zellige plan --save-plan/--save-batch/--json`: a plan, a batch and
// the model; `tarot scenes`: a scene's image and program; `kernelflume trace gen`: a small
// request trace), plus awkward paths: a folder, an empty
// file, a symlink loop, a dangling symlink, a symlink to an input, a missing file, a 300-character
// file name.
//
// Layout under root: in/ (inputs, never written by a passing case), out/ (where outputs go),
// mut/ (mutated inputs of JSON cases), .harness/ (the harness's own files, not checked).
// Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::fuzz {

struct SampleFiles {
  std::string root;  // absolute work folder
  std::string in_dir, out_dir, mut_dir, harness_dir;

  // JSON inputs by kind.
  std::string cluster;         // a800x8 preset copy (8 ranks, device by name)
  std::string cluster1;        // the same with 1 rank (for `run`, whose job is 1 rank here)
  std::string device_cluster;  // a800x8 with its device inline (device fields to mutate)
  std::string device;          // the a800-sxm4-80gb device preset (a800x8 names it)
  std::string model;           // wan2.1-1.3b as JSON
  std::string batch, plan;     // v50 for cluster (usp)
  std::string batch1, plan1;   // load 2000 on cluster1 (usp), what `run --plan` executes
  std::string profile;         // hand-made 2-rank profile
  std::string batch_profile, plan_profile;  // planned with the profile (2 ranks)
  std::vector<std::string> run_plans;       // copies of src/cli/testdata plans (4 and 2 ranks)
  std::string topology;                     // the a6000x8 topology preset (compass)
  std::string compass_grid;                 // src/cli/testdata/compass_tiny_grid.json
  std::string trace;                        // src/xema/testdata/tiny_t2i.json (xema)
  std::string mix;                          // src/xema/serve/testdata/tiny_mix.json (xema loadgen)
  std::string tarot_image, tarot_scene;     // a refscenes scene (`tarot scenes`): PNG and JSON
  std::string kf_trace;    // a small Mooncake-format trace (`kernelflume trace gen`), JSONL
  std::string kf_profile;  // a hand-made engine profile (`kernelflume replay --profile`)

  // Awkward paths (all inside root except the devices).
  std::string dir;               // an existing folder
  std::string empty_file;        // a 0-byte file
  std::string loop;              // a symlink loop (loop_a -> loop_b -> loop_a)
  std::string dangling;          // a symlink to a missing file
  std::string link_to_cluster;   // a symlink to `cluster`
  std::string missing;           // a file that does not exist
  std::string missing_dir_file;  // a file in a folder that does not exist
  std::string long_name;         // a 300-character file name in out/ (longer than NAME_MAX)

  // Every JSON input above (for "wrong kind of file" values).
  std::vector<std::string> AllInputs() const;
};

// Sets up root (which must be empty or missing) from the repository at source_dir and the
// tessera binary `bin`. Error: a copy or a tessera command failed (with its stderr).
core::StatusOr<SampleFiles> SetUpSamples(const std::string& bin, const std::string& source_dir,
                                         const std::string& root);

}  // namespace tessera::fuzz
