// The cost model a planning subcommand prices with, chosen from its command line: either the
// analytic model on a cluster preset/file and a DiT preset/file (--cluster, --model), or the
// profile-priced model of a measured profile (--profile FILE from `tessera zellige profile`;
// zellige/profile.h), whose cluster is the profiled machine (1 node x profile ranks) and
// whose model is the profiled SmallDit. The two are exclusive: --cluster/--model together
// with --profile is an error. Workloads keep meaning tokens per rank (--load), so with a
// profile of a CPU machine pass a small load (e.g. --load 2000).
// Shared by plan, simulate and bench-planner (and any later subcommand that plans).
// Plain functions; thread-safe.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/options.h"
#include "core/status.h"
#include "zellige/cost_model.h"

namespace tessera::cli {

// Defaults when neither --cluster/--model nor --profile is given.
inline constexpr const char* kDefaultCluster = "a800x16";
inline constexpr const char* kDefaultModel = "wan2.1-1.3b";

// The three options as given; an empty string means "not given".
struct CostModelArgs {
  std::string cluster;
  std::string model;
  std::string profile;
};

// Adds --cluster, --model and --profile to `cmd`, storing into *args (which must outlive
// parsing). Help texts name the defaults above.
// When `paths` is given, the options are recorded as inputs (a preset name is not a file).
void AddCostModelOptions(CLI::App* cmd, CostModelArgs* args, CommandPaths* paths = nullptr);

// The cost model for the arguments (empty = not given):
//   profile non-empty: LoadProfile(profile) and the profile-priced CostModel; InvalidArgument
//     ("--cluster: cannot be combined with --profile ...") when cluster or model is non-empty;
//   otherwise: the analytic CostModel on LoadCluster(cluster or kDefaultCluster) and
//     LoadDitModel(model or kDefaultModel).
// Errors name the option or the file and field.
core::StatusOr<std::unique_ptr<zellige::CostModel>> MakeCostModel(const std::string& cluster_arg,
                                                                  const std::string& model_arg,
                                                                  const std::string& profile_arg);
core::StatusOr<std::unique_ptr<zellige::CostModel>> MakeCostModel(const CostModelArgs& args);

// One line saying what prices the model: "analytic cost model on a cluster profile
// modeled from datasheets" or "profile-priced cost model (measured on HOST, DATE)".
std::string DescribeCostModel(const zellige::CostModel& cost);

}  // namespace tessera::cli
